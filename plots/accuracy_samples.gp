# Held-out accuracy against training samples seen (all ranks), one line per configuration.
# Data blocks: one per configuration; first line its title, then "samples accuracy_percent" rows.
DATAFILE = "accuracy_samples.dat"
OUTBASE = "accuracy_samples"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Held-out accuracy against samples seen, experiment ".EXPERIMENT
set xlabel "training samples seen (all ranks)"
set ylabel "held-out accuracy (%)"
set yrange [0:100]
set format x "%.3s%c"
PLOT = 'plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2 with linespoints lw 2 lt i + 1 pt (i % 12) + 1 ps 0.7 pi 5 title columnheader(1)'
