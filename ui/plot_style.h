// How the inspector's QCustomPlots follow the desktop: colours from the
// widget's palette (light or dark theme) and paint buffers at the screen's
// device pixel ratio. Used by PlotsWidget and TracePlot; checked by
// tests/ui/theme_test.cpp and tests/ui/hidpi_test.cpp.
#pragma once

#include <QPalette>

class QCPAxis;
class QCPLayoutElement;
class QCPLayoutGrid;
class QCPTextElement;
class QCustomPlot;
class QString;
class QWidget;

namespace kvscope::ui {

// Colours the plot's background, axes (lines, ticks, tick labels, labels),
// grids, legend (box, border, item text) and title text elements from
// `palette`. Series colours are the caller's. Does not replot.
void applyPaletteToPlot(QCustomPlot* plot, const QPalette& palette);

// QCustomPlot 2.1 sizes its paint buffers for the device pixel ratio the
// widget had when it was constructed and never looks again, so a plot made
// before its window reached a high-DPI screen (or moved there) is drawn
// blurred and scaled up. This resets the buffers to the widget's current
// ratio and replots; returns whether it had to. Call it when the widget is
// shown and on screen / pixel-ratio changes.
bool syncPlotPixelRatio(QCustomPlot* plot);

// Moves `plot`'s legend out of its axes into a new first row of the layout,
// which keeps only the height it needs, and returns that row's grid with
// the legend in column `legend_column` (0 or 1) beside an element that takes
// the rest of the width (a title, or nothing): outside the axes, the legend
// never covers the data.
QCPLayoutGrid* moveLegendToHeaderRow(QCustomPlot* plot, int legend_column, QCPLayoutElement* beside);

// A strip as the Plots dock draws them: a header row with the bold title and,
// at its right, a one-row legend (outside the axes, so it never covers the
// data), few ticks, and fixed side margins (room for "000000" on the left
// and "0000" on the right) so that strips stacked in one column line up
// their x axes whether or not a strip has a right axis. x spans
// [0, window_steps] until the caller slides it.
QCustomPlot* makeStripPlot(QWidget* parent, const QString& title, double window_steps);

// Ticks at whole numbers only, few of them, for an axis of counts (sequences,
// blocks, tokens): a strip of counts from 0 to 1 was labelled 0, 0.25, 0.5,
// 0.75 and 1, five labels in 40 px.
void useCountTicks(QCPAxis* axis);

// The title of a plot made by makeStripPlot (the first text element of its
// layout, at any depth), or nullptr.
QCPTextElement* stripPlotTitle(QCustomPlot* plot);

}  // namespace kvscope::ui
