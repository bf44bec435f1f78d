# Training loss against epoch, one line per configuration (its first run).
# Data blocks: one per configuration; first line its title, then "epoch train_loss" rows.
DATAFILE = "loss.dat"
OUTBASE = "loss"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Training loss, experiment ".EXPERIMENT
set xlabel "epoch"
set ylabel "training loss (mean over the epoch's steps, log scale)"
set logscale y
PLOT = 'plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2 with linespoints lw 2 lt i + 1 pt (i % 12) + 1 ps 0.7 pi 5 title columnheader(1)'
