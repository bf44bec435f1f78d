# Where the efficiency went, per configuration against its baseline: the percentage points of
# efficiency lost to compute inflation (ranks sharing cores, caches and memory bandwidth), exposed
# communication, waiting for the slowest training rank, and the rest, stacked (they add up to
# 100 − efficiency; a negative part is drawn below zero). harness/results/efficiency_loss.h
# defines them.
# Data: a comment line, then "label compute communication waiting rest" rows.
DATAFILE = "efficiency_loss.dat"
OUTBASE = "efficiency_loss"
set title "Where the efficiency went, experiment ".EXPERIMENT
set ylabel "efficiency lost (percentage points)"
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.7
set xtics rotate by -30 left font ",9"
set xzeroaxis
set key outside right top
set bmargin 11
PLOT = 'plot DATAFILE using 2:xtic(1) title "compute inflation" lc "#4477aa", "" using 3 title "exposed communication" lc "#ee6677", "" using 4 title "waiting for the slowest rank" lc "#ccbb44", "" using 5 title "rest" lc "#bbbbbb"'
