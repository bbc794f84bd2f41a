# SPDX-License-Identifier: MIT
# fstests/common/nvme_ack_trace.awk -- is every acknowledged write durable, by the NVMe
# commands the Linux driver sent? One timeline from tracefs (/sys/kernel/tracing/trace):
# the driver's nvme/nvme_setup_cmd and nvme/nvme_complete_rq events plus the "wzack SEQ OFFSET"
# markers that wz_ackwrite writes to trace_marker once the writer handed a write back.
# Portable awk (POSIX: runs under mawk on the host and busybox awk in the guest; no
# strtonum, gensub or bit operations).
#
#   awk -f nvme_ack_trace.awk -v disk=nvme0n1 -v rule=flush|fua|through [-v lba=512]
#       [-v block=4096] [-v map=FILE] [-v show=10] TRACE
#
#   rule    flush or fua: each acked write must be durable by FUA or a later flush;
#           through: no durability rule per write (the cache is off), but no Set Features
#           FID 06h in the run and every Get Features FID 06h result WCE=0 (see below)
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
# Events lost by the trace buffer, or out of time order, are violations too.
# Output: "key value" summary lines, then up to `show` "violation: ..." lines.
#   acks, acks_ok, violations, durable_fua, durable_flush (acks durable by FUA, by a later
#   Flush), through_plain (rule through: acks of plain Writes), duplicate_acks,
#   writes, fua_writes, flushes, failed_cmds (completions with status != 0),
#   acked_irq_completions (acked writes whose last completion was reaped in hard-IRQ
#   context), set_features_wce, get_features_wce0, get_features_wce1,
#   wce0_before_first_ack, wce0_after_last_ack (yes/no), lost_events, unordered

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
	if (rule != "flush" && rule != "fua" && rule != "through") {
		print "nvme_ack_trace.awk: rule must be flush, fua or through" > "/dev/stderr"
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

ev == "tracing_mark_write:" {
	j = index($0, "tracing_mark_write: wzack ")
	if (j == 0) next
	split(substr($0, j + length("tracing_mark_write: wzack ")), a, " ")
	seq = a[1]; off = a[2] + 0
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
	key = ctrl ":" field($0, "qid") ":" field($0, "cmdid")
	op = $0; sub(/.*cmd=\(/, "", op); sub(/ .*/, "", op)
	if (op == "nvme_admin_set_features" || op == "nvme_admin_get_features") {
		if (hexval(field($0, "fid")) == 6) {
			if (op == "nvme_admin_set_features") setf++
			else pend[key] = "G"
		}
		next
	}
	if (field($0, "disk") != disk) next
	if (op == "nvme_cmd_write") {
		slba = field($0, "slba") + 0; nlb = field($0, "len") + 1
		fua = int(hexval(field($0, "ctrl")) / 16384) % 2
		nwrites++
		if (fua) nfua++
		pend[key] = "W " slba " " nlb " " fua
		for (b = slba; b < slba + nlb; b++) {
			wkey[b] = key; wstate[b] = "P"
		}
	} else if (op == "nvme_cmd_flush") {
		pend[key] = "F " NR
	}
	next
}

ev == "nvme_complete_rq:" {
	ctrl = $0; sub(/.*nvme_complete_rq: /, "", ctrl); sub(/:.*/, "", ctrl)
	key = ctrl ":" field($0, "qid") ":" field($0, "cmdid")
	if (!(key in pend)) next
	split(pend[key], p, " ")
	delete pend[key]
	st_text = field($0, "status")
	st = hexval(st_text)
	if (st != 0) failed++
	if (p[1] == "G") {
		ngf++
		if (st == 0) {
			v = hexval(field($0, "res")) % 2
			gfline[ngf] = NR; gfval[ngf] = v
			if (v) gf1++
			else gf0++
		}
	} else if (p[1] == "F") {
		if (st == 0) {
			nflush++
			if (p[2] + 0 > best_flush_start) best_flush_start = p[2] + 0
		}
	} else if (p[1] == "W") {
		irq = (flagsf ~ /[hH]/)
		for (b = p[2]; b < p[2] + p[3]; b++) {
			if (wkey[b] != key) continue
			wstate[b] = "C"; wcomp[b] = NR; wfua[b] = p[4] + 0; wstatus[b] = st; wstatus_text[b] = st_text
			wirq[b] = irq
		}
	}
	next
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
	for (k = 1; k <= nviol && k <= show; k++) {
		print "violation: " vline[k]
	}
}
