# Median time of one allreduce (the slowest rank's) against message size, log-log, one line per
# backend and rank count. Small messages show latency, large ones bandwidth.
# Data blocks: one per point; first line its title, then "bytes time_us_median" rows.
DATAFILE = "latency.dat"
OUTBASE = "latency"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Allreduce time, experiment ".EXPERIMENT
set xlabel "message size (bytes, log scale)"
set ylabel "median time per allreduce (µs, log scale)"
set logscale x 2
set logscale y 10
# SIZE_TICS labels the measured sizes with binary prefixes, e.g. "('4 B' 4, '1 KiB' 1024)".
eval "set xtics ".SIZE_TICS
PLOT = 'plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2 with linespoints lt i + 1 lw 2 pt (i % 12) + 2 ps 1.1 title columnheader(1)'
