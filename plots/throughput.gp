# Training throughput against MPI ranks, one line per configuration, median over repeats with
# bootstrap 95% error bars.
# Data blocks: one per configuration; first line its title, then "ranks median low high" rows.
DATAFILE = "throughput.dat"
OUTBASE = "throughput"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Training throughput, experiment ".EXPERIMENT
set xlabel "MPI ranks"
set ylabel "throughput (samples/s, all ranks)"
set logscale x 2
eval "set xtics ".RANK_TICS
set yrange [0:*]
PLOT = 'plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2:3:4 with yerrorlines lt i + 1 lw 2 pt (i % 12) + 2 ps 1.3 title columnheader(1)'
