# Scheme pipeline: the measured bubble (the share of their steps the stages spend idle) against the
# predicted (p - 1)/(m + p - 1) of balanced stages with free transfers, a point per configuration
# (median over repeats), one series per schedule and layout; on the diagonal they agree, above it
# imbalance and transfers add idle time.
# Data blocks: one per series; first line its title, then "predicted_percent measured_percent" rows.
DATAFILE = "pipeline_bubble.dat"
OUTBASE = "pipeline_bubble"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Pipeline bubble, measured against predicted, experiment ".EXPERIMENT
set xlabel "predicted bubble (p-1)/(m+p-1) (% of the step)"
set ylabel "measured: the stages' idle share (% of their steps)"
set xrange [0:100]
set yrange [0:100]
PLOT = 'set key below horizontal maxcols 2 box; plot x with lines lc "gray" dt 2 title "measured = predicted", for [i=0:BLOCKS-1] DATAFILE index i using 1:2 with points lt i + 1 pt (i % 12) + 2 ps 1.5 title columnheader(1)'
