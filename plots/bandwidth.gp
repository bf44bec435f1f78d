# Bus bandwidth against message size (communication benchmark), one line per backend and rank
# count. busbw = algbw · 2(p−1)/p, so lines for different p compare the links' throughput.
# Data blocks: one per point; first line its title, then "bytes busbw_gbps" rows.
DATAFILE = "bandwidth.dat"
OUTBASE = "bandwidth"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Allreduce bus bandwidth, experiment ".EXPERIMENT
set xlabel "message size (bytes, log scale)"
set ylabel "bus bandwidth (GB/s, 10^9 bytes/s)"
set logscale x 2
# SIZE_TICS labels the measured sizes with binary prefixes, e.g. "('4 B' 4, '1 KiB' 1024)".
eval "set xtics ".SIZE_TICS
set yrange [0:*]
PLOT = 'plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2 with linespoints lt i + 1 lw 2 pt (i % 12) + 2 ps 1.1 title columnheader(1)'
