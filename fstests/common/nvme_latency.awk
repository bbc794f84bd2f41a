# SPDX-License-Identifier: MIT
# fstests/common/nvme_latency.awk -- per-command device latency from a trace of the guest's
# nvme/nvme_setup_cmd and nvme/nvme_complete_rq events (fstests/common/ackwrite _trace_end),
# for the I/O commands on nvme0n1. One line per opcode seen:
#   OPNAME n=N median_us=M p10_us=A p90_us=B
# (the time from the driver's setup of the command to its completion; the trace clock is
# "mono" (nvme/040) or "global", in seconds with microsecond resolution). Lost events are a failure (exit 1).
function field(s, name,   re) {
	re = name "=[^,) ]*"
	if (!match(s, re)) return ""
	return substr(s, RSTART + length(name) + 1, RLENGTH - length(name) - 1)
}
function ts(s,   a) {
	# "  xfs_io-123 [001] ..... 12.345678: nvme_..."
	if (!match(s, /[0-9]+\.[0-9]+: nvme_/)) return -1
	return substr(s, RSTART, RLENGTH - 7) + 0
}
/LOST [0-9]+ EVENTS/ { lost = 1 }
/ nvme_setup_cmd: / && /disk=nvme0n1,/ {
	if (!match($0, /cmd=\([a-z_]+/)) next
	op = substr($0, RSTART + 5, RLENGTH - 5)
	key = field($0, "qid") ":" field($0, "cmdid")
	start[key] = ts($0)
	opof[key] = op
	next
}
/ nvme_complete_rq: / && /disk=nvme0n1,/ {
	key = field($0, "qid") ":" field($0, "cmdid")
	if (!(key in start)) next
	op = opof[key]
	lat[op, ++n[op]] = (ts($0) - start[key]) * 1e6
	if (field($0, "status") != "0x0") failed++
	delete start[key]
}
function pct(op, p,   i, j, k, t, m) {
	m = n[op]
	for (i = 1; i <= m; i++) v[i] = lat[op, i]
	for (i = 2; i <= m; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
	k = int(p * (m - 1) + 0.5) + 1
	return v[k]
}
END {
	if (lost) { print "lost events in the trace" > "/dev/stderr"; exit 1 }
	if (failed) { print failed " commands failed" > "/dev/stderr"; exit 1 }
	for (op in n)
		printf "%s n=%d median_us=%.0f p10_us=%.0f p90_us=%.0f\n", op, n[op], pct(op, 0.5), pct(op, 0.1), pct(op, 0.9)
}
