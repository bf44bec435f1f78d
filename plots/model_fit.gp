# The cost model against the comm benchmark it was fitted to (harness model COMM_RUN): the measured
# median time per allreduce (points) and the fitted α-β-γ form (lines), log-log, one colour per
# backend and rank count. Where a line leaves its points, the form does not describe the backend.
# Data blocks: one per backend and rank count; first line its title, then "bytes measured_us
# fitted_us" rows.
DATAFILE = "model_fit.dat"
OUTBASE = "model_fit"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Cost model fit (points measured, lines fitted), experiment ".EXPERIMENT
set xlabel "message size (bytes, log scale)"
set ylabel "time per allreduce (µs, log scale)"
set logscale x 2
set logscale y 10
eval "set xtics ".SIZE_TICS
PLOT = 'plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2 with points lt i + 1 pt (i % 12) + 2 ps 1.2 title columnheader(1), for [i=0:BLOCKS-1] DATAFILE index i using 1:3 with lines lt i + 1 lw 2 notitle'
