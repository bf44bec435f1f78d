# Parallel efficiency (speedup × baseline ranks / ranks) against MPI ranks; dashed, ideal (100%).
# Data blocks as in speedup.gp, with efficiency in percent.
DATAFILE = "efficiency.dat"
OUTBASE = "efficiency"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Parallel efficiency, experiment ".EXPERIMENT
set xlabel "MPI ranks"
set ylabel "efficiency (%)"
set logscale x 2
# RANK_TICS lists the measured rank counts, e.g. "(1, 2, 3, 4)".
eval "set xtics ".RANK_TICS
set yrange [0:*]
PLOT = 'plot DATAFILE index 0 using 1:2 with lines dt 2 lw 1.5 lc "gray40" title columnheader(1), for [i=1:BLOCKS-1] DATAFILE index i using 1:2 with linespoints lt i lw 2 pt (i % 12) + 1 ps 1.3 title columnheader(1)'
