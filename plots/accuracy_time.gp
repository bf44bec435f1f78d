# Held-out accuracy against training time (evaluation excluded), one line per configuration: time
# to accuracy, where schemes trade speed against the model's progress per sample. A point per epoch.
# Data blocks: one per configuration; first line its title, then "seconds accuracy_percent" rows.
DATAFILE = "accuracy_time.dat"
OUTBASE = "accuracy_time"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Held-out accuracy against training time, experiment ".EXPERIMENT
set xlabel "training time (s, evaluation excluded)"
set ylabel "held-out accuracy (%)"
# Many configurations with long names: the key goes below, in two columns (render.gp's sets the
# key before PLOT, which sets it again).
PLOT = 'set key below horizontal maxcols 2 box; plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2 with linespoints lw 2 lt i + 1 pt (i % 12) + 1 ps 1 title columnheader(1)'
