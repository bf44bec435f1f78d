# What the cost model predicts for a training run (harness model COMM_RUN --predict TRAIN_RUN):
# speedup against one rank without communication, by ranks, per family of configurations (equal
# but for the ranks). Solid: without overlap; dashed: with overlap; points: measured, where the
# run has the family at that many ranks. Dotted grey: ideal (linear) speedup.
# Data blocks: block 0 is the ideal line; then one per family, first line its title, then
# "ranks speedup speedup_overlap measured_speedup" rows (nan where nothing was measured).
DATAFILE = "prediction.dat"
OUTBASE = "prediction"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Predicted speedup (solid: no overlap, dashed: overlap, points: measured), experiment ".EXPERIMENT
set xlabel "MPI ranks (log scale)"
set ylabel "speedup over one rank (x, log scale)"
set logscale x 2
set logscale y 2
PLOT = 'plot DATAFILE index 0 using 1:2 with lines dt 3 lw 1.5 lc "gray40" title columnheader(1), for [i=1:BLOCKS-1] DATAFILE index i using 1:2 with lines lt i lw 2 title columnheader(1), for [i=1:BLOCKS-1] DATAFILE index i using 1:3 with lines lt i lw 2 dt 2 notitle, for [i=1:BLOCKS-1] DATAFILE index i using 1:4 with points lt i pt 7 ps 1.4 notitle'
