// Light / Dark / System appearance and the status colours every page uses.
//
// System keeps the platform's palette (and style); Light and Dark set the Fusion style with a
// palette of their own, so every widget, chart and banner follows. Pages never hard-code colours:
// they take status colours from statusColors(palette()) and refresh them on QEvent::PaletteChange,
// so a theme switch repaints everything without a restart. Each status colour meets the WCAG AA
// contrast ratio (4.5:1) against the background it is drawn on, in both palettes.
#pragma once

#include <QColor>
#include <QLabel>
#include <QPalette>
#include <QString>

class QApplication;

namespace inferdesk::store {
class Settings;
}

namespace inferdesk::gui {

enum class ThemeChoice { System, Light, Dark };

QString themeName(ThemeChoice choice);           // "system" / "light" / "dark"
ThemeChoice themeFromName(const QString& name);  // anything else: System

QPalette lightPalette();
QPalette darkPalette();
bool isDarkPalette(const QPalette& palette);

// WCAG 2 contrast ratio of two opaque colours (1 .. 21).
double contrastRatio(const QColor& a, const QColor& b);

struct StatusColors {
  QColor error_text, error_background, error_border;
  QColor warning_text, warning_background, warning_border;
  QColor good_text;  // "fits", on the window background
  QColor bad_text;   // "will not fit", on the window background
  QColor dense;      // a dense layer's cells in the expert heatmap
  QColor empty;      // a cell with no routed tokens yet
};
StatusColors statusColors(const QPalette& palette);

// The style sheet of a notice banner (QLabel#objectName) in this palette.
QString bannerStyleSheet(const QPalette& palette, const QString& objectName, bool error);

// The settings key holding the choice ("ui/theme").
inline constexpr const char* kThemeSettingKey = "ui/theme";

// Applies a choice to the running application. System resets the application palette to the
// platform's; Light and Dark switch to the Fusion style (which follows a palette everywhere).
void applyTheme(QApplication& app, ThemeChoice choice);
// Reads the choice from the settings (System when unset or unreadable).
ThemeChoice savedTheme(const store::Settings& settings);

// A label in the palette's placeholder colour that follows palette changes (hints, notes).
class DimLabel : public QLabel {
 public:
  explicit DimLabel(const QString& text = {}, QWidget* parent = nullptr);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void refresh();
  bool refreshing_ = false;
};

}  // namespace inferdesk::gui
