# Shared tail of every plot: draws the plot command in PLOT twice, to OUTBASE.png and OUTBASE.svg.
# The harness appends this file to each plot template; the .gp files it writes next to the
# images are complete scripts, so `gnuplot speedup.gp` in a results' plots/ folder redraws them.
set grid
# The key goes beside the plot, where it can never hide a line or a label.
set key outside right top vertical box reverse Left
# Fit the axes to the data (no rounding out to the next tic), plus a margin.
set autoscale fix
set offsets graph 0.04, graph 0.04, graph 0.06, graph 0.06
set datafile missing "nan"
# The harness sets OUTDIR (gnuplot -e) to a fresh folder of its own and renames the images into
# place, so that no file planted under an image's name is written through.
if (!exists("OUTDIR")) OUTDIR = ""
do for [format in "pngcairo svg"] {
  if (format eq "pngcairo") {
    set terminal pngcairo size 960,640 font "DejaVu Sans,11" noenhanced
    set output OUTDIR.OUTBASE.".png"
  } else {
    set terminal svg size 960,640 dynamic font "DejaVu Sans,11" noenhanced
    set output OUTDIR.OUTBASE.".svg"
  }
  @PLOT
  unset output
}
