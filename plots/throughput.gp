# Training throughput over all ranks against MPI ranks, one line per configuration.
# Data blocks: one per configuration; first line its title, then "ranks samples_per_s" rows.
DATAFILE = "throughput.dat"
OUTBASE = "throughput"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Training throughput, experiment ".EXPERIMENT
set xlabel "MPI ranks"
set ylabel "throughput (samples/s, all ranks)"
set logscale x 2
# RANK_TICS lists the measured rank counts, e.g. "(1, 2, 3, 4)".
eval "set xtics ".RANK_TICS
set yrange [0:*]
PLOT = 'plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2 with linespoints lt i + 1 lw 2 pt (i % 12) + 2 ps 1.3 title columnheader(1)'
