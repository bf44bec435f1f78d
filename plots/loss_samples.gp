# Training loss against training samples seen (all ranks), one line per configuration: compares
# batch sizes and rank counts on equal work. Each value is the mean loss over loss_every steps
# (about 100 values per point), the median over the configuration's repeats.
# Data blocks: one per configuration; first line its title, then "samples train_loss" rows.
DATAFILE = "loss_samples.dat"
OUTBASE = "loss_samples"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Training loss against samples seen, experiment ".EXPERIMENT
set xlabel "training samples seen (all ranks)"
set ylabel "training loss (log scale)"
set logscale y
set format x "%.1s%c"
PLOT = 'plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2 with linespoints lw 2 lt i + 1 pt (i % 12) + 1 ps 0.7 pi 10 title columnheader(1)'
