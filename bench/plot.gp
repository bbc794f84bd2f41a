# SPDX-License-Identifier: MIT
# bench/plot.gp -- the plots of bench/plot.sh, which prepares the data and calls
#   gnuplot -e "figure='NAME'; dir='TMPDIR'; out='FILE.svg'; fses='ext4 xfs'; modes='...'; note='...'; note2='...'; panels='...'" bench/plot.gp
# figure: host-qd-iops, host-qd-latency, host-qd-flushes (data: DIR/FS-MODE.dat, columns
# "qd iops p50 p99 device-flushes/write writer-flushes/write cpu-us/write"),
# write-host-iops (data: DIR/wh.dat, "label written unwritten raw") or zero-throughput (one
# panel per benchmark of panels, e.g. 'alloc alloc-vm'; data: DIR/zt-BENCH.dat, "label MiB/s
# slowest fastest text colour text-x", and DIR/zt-BENCH.gp, the panel's title, rows, rounds,
# x range and a line on what is not drawn). note2, if not empty, is a second footnote line.

set terminal svg size 1000,560 dynamic noenhanced font 'Helvetica,13' background rgb 'white'
set output out
set encoding utf8
set datafile missing '-'
set grid xtics ytics mytics lc rgb '#dddddd' lw 1 dt 1
set border 3
set tics nomirror out

# How each mode is drawn, and named in the key.
title_of(m) = m eq 'auto-async' ? 'writer, auto (picks flush here)' : \
	m eq 'flush-async' ? 'writer, --mode flush' : \
	m eq 'dsync-async' ? 'O_DSYNC through io_uring' : \
	m eq 'dsync-sync' ? 'O_DSYNC pwrite from QD threads' : \
	m eq 'ceiling' ? 'ceiling: O_DIRECT, no durability' : \
	m eq 'flush-before' ? 'writer, --mode flush, earlier build' : m
colour_of(m) = m eq 'auto-async' ? '#d62728' : \
	m eq 'flush-async' ? '#1f77b4' : \
	m eq 'dsync-async' ? '#8c8c8c' : \
	m eq 'dsync-sync' ? '#000000' : \
	m eq 'ceiling' ? '#2ca02c' : '#9467bd'
point_of(m) = m eq 'auto-async' ? 7 : m eq 'flush-async' ? 5 : m eq 'dsync-async' ? 9 : \
	m eq 'dsync-sync' ? 13 : m eq 'ceiling' ? 11 : 3
dat(fs, m) = sprintf('%s/%s-%s.dat', dir, fs, m)
nfs = words(fses)
nmodes = words(modes)

if (figure eq 'host-qd-iops' || figure eq 'host-qd-latency' || figure eq 'host-qd-flushes') {
	set logscale x 2
	set xtics (1, 2, 4, 8, 16, 32, 64, 128, 256)
	set autoscale yfix
	set offsets graph 0.04, graph 0.04, graph 0.06, graph 0.06
	set xlabel 'queue depth (writes in flight; threads for pwrite)'
	set bmargin 11
	set key at screen 0.5, 0.125 center center horizontal maxrows 2 width 2 samplen 3 box lc rgb '#bbbbbb'
	set label 99 note at screen 0.01, 0.025 left font ',10' tc rgb '#555555'
	if (figure eq 'host-qd-iops') {
		set multiplot layout 1, nfs title 'Durable 4 KiB random overwrites of a written file, direct-I/O loop device: IOPS (median)'
		set logscale y 10
		set ylabel 'writes per second'
		do for [i = 1:nfs] {
			fs = word(fses, i)
			set title fs
			plot for [k = 1:nmodes] dat(fs, word(modes, k)) using 1:2 with linespoints \
				lw 2 pt point_of(word(modes, k)) ps 0.9 lc rgb colour_of(word(modes, k)) \
				title title_of(word(modes, k))
			unset key
			unset label 99
		}
		unset multiplot
	}
	if (figure eq 'host-qd-latency') {
		set multiplot layout 1, nfs title 'Durable 4 KiB random overwrites of a written file, direct-I/O loop device: latency, p50 solid, p99 dashed'
		set logscale y 10
		set ylabel 'latency, submission to durable (us)'
		do for [i = 1:nfs] {
			fs = word(fses, i)
			set title fs
			plot for [k = 1:nmodes] dat(fs, word(modes, k)) using 1:3 with linespoints \
				lw 2 pt point_of(word(modes, k)) ps 0.9 lc rgb colour_of(word(modes, k)) \
				title title_of(word(modes, k)), \
			     for [k = 1:nmodes] dat(fs, word(modes, k)) using 1:4 with linespoints \
				lw 1.5 dt 2 pt point_of(word(modes, k)) ps 0.6 lc rgb colour_of(word(modes, k)) notitle
			unset key
			unset label 99
		}
		unset multiplot
	}
	if (figure eq 'host-qd-flushes') {
		set multiplot layout 1, nfs title 'Flush requests per durable write at the loop device (the ceiling sends none)'
		set logscale y 10
		set yrange [0.01:2]
		set ylabel 'flushes per write'
		# The ceiling's 0 has no place on a log scale.
		fmodes = ''
		do for [k = 1:nmodes] {
			if (word(modes, k) ne 'ceiling') { fmodes = fmodes.' '.word(modes, k) }
		}
		do for [i = 1:nfs] {
			fs = word(fses, i)
			set title fs
			plot for [k = 1:words(fmodes)] dat(fs, word(fmodes, k)) using 1:5 \
				with linespoints lw 2 pt point_of(word(fmodes, k)) ps 0.9 lc rgb colour_of(word(fmodes, k)) \
				title title_of(word(fmodes, k)), \
			     dat(fs, word(fmodes, 1)) using 1:(1 / $1) with lines lw 1.5 dt 3 lc rgb '#555555' notitle, \
			     NaN with lines lw 1.5 dt 3 lc rgb '#555555' title '1/QD: one flush per QD writes'
			unset key
			unset label 99
		}
		unset multiplot
	}
}

if (figure eq 'write-host-iops') {
	set style data histograms
	set style histogram clustered gap 1
	set style fill solid 0.85 border rgb '#333333'
	set boxwidth 0.9
	set xtics nomirror font ',12'
	set ylabel 'writes per second (median)'
	set yrange [0:*]
	set key top left
	set bmargin 7
	set title 'Durable 4 KiB random overwrites, asynchronous API, ext4 on a direct-I/O loop device and a raw one'
	set label 99 note at screen 0.01, 0.025 left font ',10' tc rgb '#555555'
	plot dir.'/wh.dat' using 2:xtic(1) title 'written file (wzero alloc)' lc rgb '#1f77b4', \
	     '' using 3 title 'unwritten file (fallocate)' lc rgb '#ff7f0e', \
	     '' using 4 title 'raw loop device' lc rgb '#7f7f7f'
}

if (figure eq 'zero-throughput') {
	# Horizontal bars, a panel per benchmark, each on its own scale of MiB/s.
	npanels = words(panels)
	# The height grows with the panels; the margins stay the same in pixels.
	height = 260 + 220 * npanels
	set terminal svg size 1000, height dynamic noenhanced font 'Helvetica,13' background rgb 'white'
	set output out
	set style fill solid 0.85 border rgb '#333333'
	set grid noytics
	set ytics nomirror scale 0 font ',12'
	set key top right samplen 1.5 font ',11'
	set label 99 note.(note2 ne '' ? "\n".note2 : '') at screen 0.01, 0.04 left font ',10' tc rgb '#555555'
	set multiplot layout npanels, 1 \
		title 'Zeroing throughput per method: MiB/s of the median time (wzero in blue, the other tools in grey)' \
		margins screen 0.2, screen 0.98, screen 115.0 / height, screen 1 - 80.0 / height \
		spacing screen 0, screen 72.0 / height
	do for [i = 1:npanels] {
		# The axis is named once, under the last panel.
		if (i == npanels) { set xlabel 'MiB/s (the whole range made written zeroes, timed to completion)' }
		load sprintf('%s/zt-%s.gp', dir, word(panels, i))
		d = sprintf('%s/zt-%s.dat', dir, word(panels, i))
		set title ptitle
		set yrange [prows - 0.5:-0.5]
		set xrange [0:pxmax]
		unset label 98
		if (pextra ne '') {
			set label 98 pextra at graph 0.99, graph 0.06 right font ',10' tc rgb '#555555'
		}
		if (prounds > 1) {
			plot d using ($2 / 2):0:($2 / 2):(0.32):6:ytic(1) with boxxyerror lc rgb variable notitle, \
			     d using 2:0:3:4 with xerrorbars pt 0 lw 1.2 lc rgb '#333333' \
				title sprintf('slowest and fastest of the %d rounds', prounds), \
			     d using 7:0:5 with labels left offset char 1, 0 font ',11' notitle
		} else {
			plot d using ($2 / 2):0:($2 / 2):(0.32):6:ytic(1) with boxxyerror lc rgb variable notitle, \
			     d using 7:0:5 with labels left offset char 1, 0 font ',11' notitle
		}
		unset label 99
	}
	unset multiplot
}
