# SPDX-License-Identifier: MIT
# fstests/common/nvme_ack_trace.awk -- is every acknowledged write durable, by the NVMe
# commands the Linux driver sent? One timeline from tracefs (/sys/kernel/tracing/trace):
# the driver's nvme/nvme_setup_cmd and nvme/nvme_complete_rq events plus the "wzack SEQ OFFSET"
# markers that wz_ackwrite writes to trace_marker once the writer handed a write back.
# Portable awk (POSIX: runs under mawk on the host and busybox awk in the guest; no
# strtonum, gensub or bit operations).
#
#   awk -f nvme_ack_trace.awk -v disk=nvme0n1 -v rule=flush|fua|through|change [-v lba=512]
#       [-v block=4096] [-v map=FILE] [-v show=10] [-v bound_ms=100] TRACE
#
#   rule    flush or fua: each acked write must be durable by FUA or a later flush;
#           through: no durability rule per write (the cache is off), but no Set Features
#           FID 06h in the run and every Get Features FID 06h result WCE=0 (see below);
#           change: the cache turns on during the run (Set Features FID 06h, WCE=1) under a
#           writer that starts in `through`; bound_ms is the age of the cache answer the
#           writer promises at an acknowledgement (see below)
#   lba     the namespace's LBA size in bytes; block: the bytes per acked write
#   map     for a file: its extent map, lines "FILE_OFFSET DEVICE_OFFSET LENGTH" in bytes
#           (offsets on the namespace; the file must be on the whole namespace, not a
#           partition); without it the ack offsets are namespace byte offsets
#   show    how many violation lines to print (default 10)
#
# The events, as Linux 6.1 and 7.2 print them (same text in both):
#   ... tracing_mark_write: wzack 17 41947136
#   ... nvme_setup_cmd: nvme0: disk=nvme0n1, qid=1, cmdid=384, nsid=1, flags=0x0, meta=0x0,
#         cmd=(nvme_cmd_write slba=80, len=7, ctrl=0x4000, dsmgmt=0, reftag=0)
#       (slba decimal; len is NLB, 0's based; ctrl is CDW12 bits 31:16, so FUA, CDW12 bit 30,
#        is ctrl bit 14 = 0x4000)
#   ... nvme_setup_cmd: nvme0: disk=nvme0n1, qid=1, cmdid=4481, ..., cmd=(nvme_cmd_flush cdw10=00 ...)
#   ... nvme_setup_cmd: nvme0: qid=0, cmdid=26, nsid=4294967295, ..., cmd=(nvme_admin_set_features fid=0x6, sv=0x0, cdw11=0x0)
#   ... nvme_setup_cmd: nvme0: qid=0, cmdid=9, ..., cmd=(nvme_admin_get_features fid=0x6, sel=0x0, cdw11=0x0)
#   ... nvme_complete_rq: nvme0: disk=nvme0n1, qid=1, cmdid=384, res=0x0, retries=0, flags=0x0, status=0x0
#       (admin completions have no disk=; res is DW0 of the completion: WCE for Get Features 06h)
# Linux 5.10 (Debian 11's 5.10.2xx) prints them otherwise in two places:
#   - the setup's cmdid carries the command id's generation counter in bits 15:12 (cmdid=4929)
#     where the completion's is the tag alone (cmdid=833, 4929 % 4096): commands are keyed
#     by cmdid % 4096, which is the same on the newer kernels (one tag in flight per queue);
#   - Set/Get Features are not decoded: cmd=(nvme_admin_set_features cdw10=06 00 00 00 01 00
#     ...), CDW10 to CDW15 as 24 bytes, little-endian: FID is the first byte, CDW11's low
#     byte the fifth.
# A command is the (controller, qid, cmdid) of its setup until its completion. The file is in
# time order (trace_clock mono: one clock for all CPUs), so the line number is the time.
#
# Per acknowledged write, for every LBA it covers (through the map for a file):
#   - the last Write command that carried the LBA was set up before the ack and completed
#     (status 0) before the ack ("ack before the write completed" otherwise);
#   - rule flush/fua: that command had FUA, or a Flush command of the namespace was set up
#     after it completed and completed (status 0) before the ack (NVMe: a Flush commits
#     the data of commands completed before the Flush was submitted).
# Rule through: no Set Features FID 06h in the trace, every Get Features FID 06h read WCE=0,
# and at least one such read before the first ack and one after the last (the writer's own
# open reads it; the test reads it again after the run), else a violation each.
# Rule change: "on" is the completion of the first Set Features FID 06h that set WCE=1 (there
# must be one, and none that clears it after it). The writer marks "wzsub SEQ [OFFSET]" before
# it starts write SEQ, before it could decide anything about that write. Per ack:
#   - started (wzsub) more than bound_ms after "on": its Write(s) must be durable at the ack by
#     FUA or by a Flush set up after they completed and completed before the ack. No wall-clock
#     bound on the machine is asserted: such a write was decided later than bound_ms after the
#     cache turned on, so the answer the writer then held was read after "on";
#   - acknowledged after "on" but started earlier: the cache answer it rested on may be stale;
#     its Write(s) must be durable by the end of the trace (FUA, or a Flush set up after they
#     completed, such as the one the writer sends when it leaves `through`);
#   - acknowledged before "on": nothing (the cache was off).
# There must be at least one ack started more than bound_ms after "on" (else the run proves
# nothing), and a Get Features FID 06h that read WCE=1 after "on" (the writer's re-read).
# An ack without OFFSET (an SQLite commit) stands for every Write of the namespace set up
# between its wzsub and its wzack (inside the map, with one: the WAL's extents); each must
# also have completed before the ack.
# Events lost by the trace buffer, or out of time order, are violations too.
# Output: "key value" summary lines, then up to `show` "violation: ..." lines.
#   acks, acks_ok, violations, durable_fua, durable_flush (acks durable by FUA, by a later
#   Flush), through_plain (rule through: acks of plain Writes), duplicate_acks,
#   writes, fua_writes, flushes, failed_cmds (completions with status != 0),
#   acked_irq_completions (acked writes whose last completion was reaped in hard-IRQ
#   context), set_features_wce, get_features_wce0, get_features_wce1,
#   wce0_before_first_ack, wce0_after_last_ack (yes/no), lost_events, unordered;
#   rule change also: acks_before_on, acks_stale_window (acked after "on", started within
#   bound_ms of it), acks_past_bound (started later), stale_window_durable_by_end (yes/no),
#   rereads_wce1_after_on, first_cover_ms (from "on" to the first FUA Write or Flush set up
#   after it; -1: none)

function hexval(s,    v, i, c, d) {
	s = tolower(s)
	if (substr(s, 1, 2) == "0x") {
		s = substr(s, 3)
	}
	v = 0
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		d = index("0123456789abcdef", c)
		if (d == 0) {
			break
		}
		v = v * 16 + d - 1
	}
	return v
}

# The value of " NAME=" in the line, up to the next comma, space or parenthesis.
function field(s, name,    i, r, j) {
	i = index(s, " " name "=")
	if (i == 0) {
		return ""
	}
	r = substr(s, i + length(name) + 2)
	j = match(r, /[ ,)]/)
	if (j > 0) {
		r = substr(r, 1, j - 1)
	}
	return r
}

function violation(what) {
	nviol++
	if (nviol <= show) {
		vline[nviol] = what
	}
}

# Whether LBAs [slba, slba + nlb) touch the map's device ranges (all of them without a map).
function in_map(slba, nlb,    k, a, b) {
	if (map == "") {
		return 1
	}
	a = slba * lba; b = (slba + nlb) * lba
	for (k = 1; k <= nmap; k++) {
		if (a < mphys[k] + mlen[k] && mphys[k] < b) {
			return 1
		}
	}
	return 0
}

# Namespace byte offset of file byte offset `off` (through the map), -1 if unmapped.
function dev_offset(off,    k) {
	if (map == "") {
		return off
	}
	for (k = 1; k <= nmap; k++) {
		if (off >= mlog[k] && off < mlog[k] + mlen[k]) {
			return mphys[k] + (off - mlog[k])
		}
	}
	return -1
}

BEGIN {
	if (lba == "") lba = 512
	if (block == "") block = 4096
	if (show == "") show = 10
	if (bound_ms == "") bound_ms = 100
	if (rule != "flush" && rule != "fua" && rule != "through" && rule != "change") {
		print "nvme_ack_trace.awk: rule must be flush, fua, through or change" > "/dev/stderr"
		bad_usage = 1
		exit 2
	}
	if (disk == "") {
		print "nvme_ack_trace.awk: disk is not set" > "/dev/stderr"
		bad_usage = 1
		exit 2
	}
	nmap = 0
	if (map != "") {
		while ((getline line < map) > 0) {
			split(line, f, " ")
			if (f[3] == "") continue
			nmap++
			mlog[nmap] = f[1] + 0; mphys[nmap] = f[2] + 0; mlen[nmap] = f[3] + 0
		}
		close(map)
	}
	best_flush_start = -1   # latest setup line of a Flush that has completed
	first_ack = 0; last_ack = 0; lost = 0; last_ts = -1; unordered = 0
	ngf = 0
	on_ts = -1; off_after_on = 0; first_cover_ts = -1
	nw = 0; npend = 0
}

# "# entries-in-buffer/entries-written: 25/25   #P:2": events dropped when the buffer was full.
/^# entries-in-buffer\/entries-written:/ {
	split($3, e, "/")
	lost += (e[2] + 0) - (e[1] + 0)
	next
}
/^#/ { next }

{
	# The timestamp field ends with ':' and is followed by the event name.
	ev = ""; flagsf = ""
	for (i = 1; i < NF; i++) {
		if ($(i + 1) ~ /^(nvme_setup_cmd|nvme_complete_rq|tracing_mark_write):$/ && $i ~ /^[0-9]+\.[0-9]+:$/) {
			ev = $(i + 1)
			ts = substr($i, 1, length($i) - 1) + 0
			flagsf = $(i - 1)
			break
		}
	}
	if (ev == "") next
	if (ts < last_ts) unordered++
	last_ts = ts
}

ev == "tracing_mark_write:" && index($0, "tracing_mark_write: wzsub ") > 0 {
	split(substr($0, index($0, "tracing_mark_write: wzsub ") + length("tracing_mark_write: wzsub ")), a, " ")
	sub_ts[a[1]] = ts; sub_w[a[1]] = nw
	next
}

ev == "tracing_mark_write:" {
	j = index($0, "tracing_mark_write: wzack ")
	if (j == 0) next
	split(substr($0, j + length("tracing_mark_write: wzack ")), a, " ")
	seq = a[1]; off = a[2] + 0
	if (rule == "change") {
		change_ack(seq, a[2])
		next
	}
	nacks++
	if (first_ack == 0) first_ack = NR
	last_ack = NR
	if (seq in acked) {
		dups++
		violation("ack " seq " " off ": acknowledged twice")
		next
	}
	acked[seq] = 1
	d = dev_offset(off)
	if (d < 0) {
		violation("ack " seq " " off ": offset not in the extent map")
		next
	}
	first = int(d / lba); n = int(block / lba); why = ""; allfua = 1
	for (b = first; b < first + n; b++) {
		if (!(b in wkey)) { why = "no Write command carried LBA " b; break }
		if (wstate[b] == "P") { why = "ack before its Write (LBA " b ", cmd " wkey[b] ") completed"; break }
		if (wstatus[b] != 0) { why = "its Write (LBA " b ") failed with status " wstatus_text[b]; break }
		if (!wfua[b]) {
			allfua = 0
			if (rule != "through" && best_flush_start <= wcomp[b]) {
				why = "LBA " b ": Write without FUA and no Flush set up after it completed (line " wcomp[b] ") and completed before the ack"
				break
			}
		}
	}
	if (why != "") {
		violation("ack " seq " " off " (line " NR "): " why)
		next
	}
	ok++
	if (wirq[first]) irqc++
	if (allfua) nfua_acks++
	else if (rule == "through") nthrough_acks++
	else nflush_acks++
	next
}

ev == "nvme_setup_cmd:" {
	ctrl = $0; sub(/.*nvme_setup_cmd: /, "", ctrl); sub(/:.*/, "", ctrl)
	key = ctrl ":" field($0, "qid") ":" (field($0, "cmdid") % 4096)
	op = $0; sub(/.*cmd=\(/, "", op); sub(/ .*/, "", op)
	if (op == "nvme_admin_set_features" || op == "nvme_admin_get_features") {
		fid = field($0, "fid"); cdw11 = field($0, "cdw11")
		if (fid == "") {  # Linux 5.10: the raw bytes
			raw = $0; sub(/.*cdw10=/, "", raw); sub(/\).*/, "", raw)
			split(raw, rb, " ")
			fid = rb[1]; cdw11 = rb[5]
		}
		if (hexval(fid) == 6) {
			if (op == "nvme_admin_set_features") {
				setf++
				pend[key] = "S " hexval(cdw11) % 2
			} else pend[key] = "G"
		}
		next
	}
	if (field($0, "disk") != disk) next
	if (op == "nvme_cmd_write") {
		slba = field($0, "slba") + 0; nlb = field($0, "len") + 1
		fua = int(hexval(field($0, "ctrl")) / 16384) % 2
		nwrites++
		if (fua) nfua++
		if (fua && on_ts >= 0 && first_cover_ts < 0) first_cover_ts = ts
		nw++
		wslba[nw] = slba; wnlb[nw] = nlb; wfua_i[nw] = fua; wdone[nw] = 0
		pend[key] = "W " slba " " nlb " " fua " " nw
		for (b = slba; b < slba + nlb; b++) {
			wkey[b] = key; wstate[b] = "P"
		}
	} else if (op == "nvme_cmd_flush") {
		pend[key] = "F " NR
		if (on_ts >= 0 && first_cover_ts < 0) first_cover_ts = ts
	}
	next
}

ev == "nvme_complete_rq:" {
	ctrl = $0; sub(/.*nvme_complete_rq: /, "", ctrl); sub(/:.*/, "", ctrl)
	key = ctrl ":" field($0, "qid") ":" (field($0, "cmdid") % 4096)
	if (!(key in pend)) next
	split(pend[key], p, " ")
	delete pend[key]
	st_text = field($0, "status")
	st = hexval(st_text)
	if (st != 0) failed++
	if (p[1] == "S") {
		if (st == 0 && p[2] == 1 && on_ts < 0) on_ts = ts
		else if (st == 0 && p[2] == 0 && on_ts >= 0) off_after_on++
	} else if (p[1] == "G") {
		ngf++
		if (st == 0) {
			v = hexval(field($0, "res")) % 2
			gfline[ngf] = NR; gfval[ngf] = v
			if (v) gf1++
			else gf0++
			if (v && on_ts >= 0) rereads_on++
		}
	} else if (p[1] == "F") {
		if (st == 0) {
			nflush++
			if (p[2] + 0 > best_flush_start) best_flush_start = p[2] + 0
		}
	} else if (p[1] == "W") {
		irq = (flagsf ~ /[hH]/)
		wdone[p[5]] = NR; wst[p[5]] = st
		for (b = p[2]; b < p[2] + p[3]; b++) {
			if (wkey[b] != key) continue
			wstate[b] = "C"; wcomp[b] = NR; wfua[b] = p[4] + 0; wstatus[b] = st; wstatus_text[b] = st_text
			wirq[b] = irq
		}
	}
	next
}

# Rule change: the Writes ack SEQ stands for, their completion lines in cw[1..n] and FUA bits
# in cf[1..n] (returns n); cwhy says why they cannot count ("" when they can).
function change_writes(seq, offarg,    n, d, first, b, k) {
	n = 0; cwhy = ""
	if (offarg != "") {
		d = dev_offset(offarg + 0)
		if (d < 0) { cwhy = "offset not in the extent map"; return 0 }
		first = int(d / lba)
		for (b = first; b < first + int(block / lba); b++) {
			if (!(b in wkey)) { cwhy = "no Write command carried LBA " b; return 0 }
			if (wstate[b] == "P") { cwhy = "ack before its Write (LBA " b ") completed"; return 0 }
			if (wstatus[b] != 0) { cwhy = "its Write (LBA " b ") failed with status " wstatus_text[b]; return 0 }
			n++; cw[n] = wcomp[b]; cf[n] = wfua[b]
		}
		return n
	}
	if (!(seq in sub_w)) { cwhy = "no wzsub marker"; return 0 }
	for (k = sub_w[seq] + 1; k <= nw; k++) {
		if (!in_map(wslba[k], wnlb[k])) continue
		if (!wdone[k]) { cwhy = "ack before its Write (slba " wslba[k] ") completed"; return 0 }
		if (wst[k] != 0) { cwhy = "its Write (slba " wslba[k] ") failed"; return 0 }
		n++; cw[n] = wdone[k]; cf[n] = wfua_i[k]
	}
	if (n == 0) cwhy = "no Write between its wzsub and its wzack"
	return n
}

function change_ack(seq, offarg,    n, k, ok_now) {
	nacks++
	if (first_ack == 0) first_ack = NR
	last_ack = NR
	if (seq in acked) {
		dups++
		violation("ack " seq ": acknowledged twice")
		return
	}
	acked[seq] = 1
	if (on_ts < 0) { before_on++; ok++; return }
	if (!(seq in sub_ts)) {
		violation("ack " seq ": no wzsub marker")
		return
	}
	n = change_writes(seq, offarg)
	if (cwhy != "") {
		violation("ack " seq " (line " NR "): " cwhy)
		return
	}
	ok_now = 1
	for (k = 1; k <= n; k++) {
		if (!cf[k] && best_flush_start <= cw[k]) ok_now = 0
	}
	if (sub_ts[seq] > on_ts + bound_ms / 1000) {
		past_bound++
		if (!ok_now) {
			violation(sprintf("ack %s (line %d): started %.1f ms after the cache turned on (bound %s ms), acknowledged without FUA or a Flush after its Write", seq, NR, (sub_ts[seq] - on_ts) * 1000, bound_ms))
			return
		}
		ok++
		if (n > 0 && !cf[1]) nflush_acks++
		else nfua_acks++
		return
	}
	window++
	ok++
	# Durable by the end of the trace: checked in END against the last Flush.
	for (k = 1; k <= n; k++) {
		if (!cf[k]) { npend++; pend_seq[npend] = seq; pend_comp[npend] = cw[k] }
	}
}

END {
	if (bad_usage) exit 2
	before = "no"; after = "no"
	for (k = 1; k <= ngf; k++) {
		if (gfval[k] == 0 && first_ack > 0 && gfline[k] < first_ack) before = "yes"
		if (gfval[k] == 0 && last_ack > 0 && gfline[k] > last_ack) after = "yes"
	}
	if (lost > 0) violation("the trace buffer lost " lost " events: the timeline is incomplete")
	if (unordered > 0) violation(unordered " events out of time order (trace_clock not one clock for all CPUs?)")
	if (rule == "change") {
		if (on_ts < 0) violation("no Set Features FID 06h turned the write cache on (WCE=1) during the run")
		if (off_after_on > 0) violation("Set Features FID 06h turned the cache off again after it was turned on")
		if (on_ts >= 0 && past_bound == 0) violation("no ack started later than " bound_ms " ms after the cache turned on: the run proves nothing")
		if (on_ts >= 0 && rereads_on == 0) violation("no Get Features FID 06h read WCE=1 after the cache turned on")
		for (k = 1; k <= npend; k++) {
			if (best_flush_start <= pend_comp[k]) {
				stale_lost++
				if (stale_lost <= 3) violation("ack " pend_seq[k] ": acknowledged after the cache turned on, its Write never covered by a later Flush")
			}
		}
	}
	if (rule == "through") {
		# No per-write durability rule: the cache must be off for the whole run.
		if (setf > 0) violation("Set Features FID 06h (volatile write cache) sent during the run (" setf ")")
		if (gf1 > 0) violation("Get Features FID 06h read WCE=1 (" gf1 " times)")
		if (before != "yes") violation("no Get Features FID 06h read WCE=0 before the first ack")
		if (after != "yes") violation("no Get Features FID 06h read WCE=0 after the last ack")
	}
	print "acks " nacks + 0
	print "acks_ok " ok + 0
	print "violations " nviol + 0
	print "durable_fua " nfua_acks + 0
	print "durable_flush " nflush_acks + 0
	print "through_plain " nthrough_acks + 0
	print "duplicate_acks " dups + 0
	print "writes " nwrites + 0
	print "fua_writes " nfua + 0
	print "flushes " nflush + 0
	print "failed_cmds " failed + 0
	print "acked_irq_completions " irqc + 0
	print "set_features_wce " setf + 0
	print "get_features_wce0 " gf0 + 0
	print "get_features_wce1 " gf1 + 0
	print "wce0_before_first_ack " before
	print "wce0_after_last_ack " after
	print "lost_events " lost + 0
	print "unordered " unordered + 0
	if (rule == "change") {
		print "acks_before_on " before_on + 0
		print "acks_stale_window " window + 0
		print "acks_past_bound " past_bound + 0
		print "stale_window_durable_by_end " (stale_lost + 0 == 0 ? "yes" : "no")
		print "rereads_wce1_after_on " rereads_on + 0
		printf "first_cover_ms %.1f\n", (first_cover_ts >= 0 ? (first_cover_ts - on_ts) * 1000 : -1)
	}
	for (k = 1; k <= nviol && k <= show; k++) {
		print "violation: " vline[k]
	}
}
