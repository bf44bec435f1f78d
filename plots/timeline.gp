# What each rank did during a few traced steps of one point (harness run --timeline), drawn from
# its Chrome trace (logs/<id>.trace.json): one row per rank and thread, time from the first drawn
# step's start. Thin boxes inside "exposed communication" are the bucket reductions it waited for.
# Data blocks: one per event name; first line its title, then "centre_ms row half_width_ms
# half_height row_label" rows.
DATAFILE = "timeline.dat"
OUTBASE = "timeline"
stats DATAFILE using 1 nooutput
BLOCKS = STATS_blocks
set title "Timeline of ".TIMELINE_POINT.", experiment ".EXPERIMENT
set xlabel "time since the first drawn step began (ms)"
set ytics scale 0 font ",10"
set grid noytics
set style fill solid 0.9 border -1
PLOT = 'plot for [i=0:BLOCKS-1] DATAFILE index i using 1:2:3:4:ytic(5) with boxxyerror lt i + 1 title columnheader(1)'
