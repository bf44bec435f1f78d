# Training throughput against the batch size, one line per configuration, median over repeats
# with bootstrap 95% error bars.
# Data blocks: one per configuration; first line its title, then "batch median low high" rows.
DATAFILE = "throughput_batch.dat"
OUTBASE = "throughput_batch"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Training throughput against batch size, experiment ".EXPERIMENT
set xlabel "batch size (samples per training rank, or global with strong scaling)"
set ylabel "throughput (samples/s, all ranks)"
set logscale x 2
eval "set xtics ".BATCH_TICS
set yrange [0:*]
PLOT = 'plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2:3:4 with yerrorlines lt i + 1 lw 2 pt (i % 12) + 2 ps 1.3 title columnheader(1)'
