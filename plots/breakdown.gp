# Where a training step's time goes, per configuration: compute (forward, backward, update),
# the exposed communication (what the step waited for) split into waiting for the slowest
# training rank's compute and the exchange itself, and the rest, stacked; medians over repeats of
# the mean step of the slowest rank.
# Data: a comment line, then "label compute_ms wait_ms exchange_ms other_ms" rows.
DATAFILE = "breakdown.dat"
OUTBASE = "breakdown"
set title "Step time breakdown, experiment ".EXPERIMENT
set ylabel "mean step time (ms)"
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.7
set xtics rotate by -30 left font ",9"
set yrange [0:*]
set bmargin 11
PLOT = 'plot DATAFILE using 2:xtic(1) title "compute" lc "#4477aa", "" using 3 title "waiting for the slowest rank" lc "#ccbb44", "" using 4 title "exchange" lc "#ee6677", "" using 5 title "other" lc "#bbbbbb"'
