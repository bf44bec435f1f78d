# Parallel efficiency (speedup × baseline ranks / ranks) against MPI ranks; dashed, ideal (100%).
# Data blocks as in speedup.gp, with efficiency in percent.
DATAFILE = "efficiency.dat"
OUTBASE = "efficiency"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title EXPERIMENT.": parallel efficiency"
set xlabel "MPI ranks"
set key top left
set ylabel "efficiency (%)"
set logscale x 2
set xtics 2
set yrange [0:*]
PLOT = 'plot DATAFILE index 0 using 1:2 with lines dt 2 lw 1.5 lc "gray40" title columnheader(1), for [i=1:BLOCKS-1] DATAFILE index i using 1:2 with linespoints lw 2 pt (i % 12) + 1 ps 1.3 title columnheader(1)'
