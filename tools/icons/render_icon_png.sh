#!/bin/sh
# Renders the application icon's PNG renditions compiled into the GUI (gui/resources/inferdesk.qrc)
# from the SVG source, with librsvg's rsvg-convert. Run from the repository root after changing
# resources/icons/io.inferdesk.InferDesk.svg.
set -eu
for size in 256 32; do
  rsvg-convert -w "$size" -h "$size" resources/icons/io.inferdesk.InferDesk.svg -o "gui/resources/inferdesk-$size.png"
done
