# Parallel efficiency (speedup × baseline ranks / ranks) against MPI ranks, median over repeats
# with bootstrap 95% error bars; dashed, 100%.
# Data blocks: block 0 is the ideal line, then one block per configuration ("ranks median low high").
DATAFILE = "efficiency.dat"
OUTBASE = "efficiency"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Parallel efficiency (".SCALING."), experiment ".EXPERIMENT
set xlabel "MPI ranks"
set ylabel "efficiency (%)"
set logscale x 2
eval "set xtics ".RANK_TICS
set yrange [0:*]
PLOT = 'plot DATAFILE index 0 using 1:2 with lines dt 2 lw 1.5 lc "gray40" title columnheader(1), for [i=1:BLOCKS-1] DATAFILE index i using 1:2:3:4 with yerrorlines lt i lw 2 pt (i % 12) + 1 ps 1.3 title columnheader(1)'
