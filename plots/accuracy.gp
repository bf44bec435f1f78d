# Held-out accuracy against epoch, one line per configuration (its first run).
# Data blocks: one per configuration; first line its title, then "epoch accuracy_percent" rows.
DATAFILE = "accuracy.dat"
OUTBASE = "accuracy"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Held-out accuracy, experiment ".EXPERIMENT
set xlabel "epoch"
set ylabel "held-out accuracy (%)"
set yrange [0:100]
PLOT = 'plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2 with linespoints lw 2 lt i + 1 pt (i % 12) + 1 ps 0.7 pi 5 title columnheader(1)'
