# Training loss against training time (evaluation excluded), one line per configuration. Each value
# is the loss curve's mean over loss_every steps, placed in time at its epoch's steady pace (one
# run per configuration: its first successful repeat).
# Data blocks: one per configuration; first line its title, then "seconds train_loss" rows.
DATAFILE = "loss_time.dat"
OUTBASE = "loss_time"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Training loss against training time, experiment ".EXPERIMENT
set xlabel "training time (s, evaluation excluded)"
set ylabel "training loss (log scale)"
set logscale y
# Many configurations with long names: the key goes below, in two columns (render.gp's sets the
# key before PLOT, which sets it again).
PLOT = 'set key below horizontal maxcols 2 box; plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2 with linespoints lw 2 lt i + 1 pt (i % 12) + 1 ps 0.7 pi 10 title columnheader(1)'
