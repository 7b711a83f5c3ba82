#include "gui/app/theme.h"

#include <QApplication>
#include <QEvent>
#include <QStyle>
#include <QStyleFactory>

#include <algorithm>
#include <cmath>
#include <exception>

#include "core/store/store.h"

namespace inferdesk::gui {

namespace {

double channel(double c) { return c <= 0.03928 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); }

double luminance(const QColor& c) {
  return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF());
}

void set_all_groups(QPalette& p, QPalette::ColorRole role, const QColor& c) {
  p.setColor(QPalette::Active, role, c);
  p.setColor(QPalette::Inactive, role, c);
  p.setColor(QPalette::Disabled, role, c);
}

}  // namespace

QString themeName(ThemeChoice choice) {
  switch (choice) {
    case ThemeChoice::Light: return "light";
    case ThemeChoice::Dark: return "dark";
    case ThemeChoice::System: break;
  }
  return "system";
}

ThemeChoice themeFromName(const QString& name) {
  if (name == "light") return ThemeChoice::Light;
  if (name == "dark") return ThemeChoice::Dark;
  return ThemeChoice::System;
}

QPalette lightPalette() {
  QPalette p(QColor(239, 239, 239));  // Fusion's light window colour
  set_all_groups(p, QPalette::Window, QColor(239, 239, 239));
  set_all_groups(p, QPalette::Base, Qt::white);
  set_all_groups(p, QPalette::AlternateBase, QColor(245, 245, 245));
  set_all_groups(p, QPalette::Text, QColor(20, 20, 20));
  set_all_groups(p, QPalette::WindowText, QColor(20, 20, 20));
  set_all_groups(p, QPalette::ButtonText, QColor(20, 20, 20));
  set_all_groups(p, QPalette::PlaceholderText, QColor(100, 100, 100));
  set_all_groups(p, QPalette::Highlight, QColor(48, 140, 198));
  set_all_groups(p, QPalette::HighlightedText, Qt::white);
  set_all_groups(p, QPalette::Link, QColor(0, 90, 180));
  set_all_groups(p, QPalette::ToolTipBase, QColor(255, 255, 220));
  set_all_groups(p, QPalette::ToolTipText, Qt::black);
  p.setColor(QPalette::Disabled, QPalette::Text, QColor(150, 150, 150));
  p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(150, 150, 150));
  p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(150, 150, 150));
  return p;
}

QPalette darkPalette() {
  QPalette p(QColor(53, 53, 53));  // button colour; the rest follows
  set_all_groups(p, QPalette::Window, QColor(45, 45, 48));
  set_all_groups(p, QPalette::Base, QColor(30, 30, 32));
  set_all_groups(p, QPalette::AlternateBase, QColor(40, 40, 43));
  set_all_groups(p, QPalette::Button, QColor(58, 58, 62));
  set_all_groups(p, QPalette::Text, QColor(230, 230, 230));
  set_all_groups(p, QPalette::WindowText, QColor(230, 230, 230));
  set_all_groups(p, QPalette::ButtonText, QColor(230, 230, 230));
  set_all_groups(p, QPalette::BrightText, QColor(255, 120, 120));
  set_all_groups(p, QPalette::PlaceholderText, QColor(160, 160, 165));
  set_all_groups(p, QPalette::Highlight, QColor(42, 110, 180));
  set_all_groups(p, QPalette::HighlightedText, Qt::white);
  set_all_groups(p, QPalette::Link, QColor(120, 180, 255));
  set_all_groups(p, QPalette::LinkVisited, QColor(190, 150, 255));
  set_all_groups(p, QPalette::ToolTipBase, QColor(60, 60, 64));
  set_all_groups(p, QPalette::ToolTipText, QColor(235, 235, 235));
  set_all_groups(p, QPalette::Light, QColor(80, 80, 85));
  set_all_groups(p, QPalette::Midlight, QColor(66, 66, 70));
  set_all_groups(p, QPalette::Mid, QColor(50, 50, 54));
  set_all_groups(p, QPalette::Dark, QColor(25, 25, 27));
  set_all_groups(p, QPalette::Shadow, QColor(10, 10, 10));
  p.setColor(QPalette::Disabled, QPalette::Text, QColor(120, 120, 125));
  p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(120, 120, 125));
  p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(120, 120, 125));
  return p;
}

bool isDarkPalette(const QPalette& palette) { return palette.color(QPalette::Window).lightness() < 128; }

double contrastRatio(const QColor& a, const QColor& b) {
  const double la = luminance(a), lb = luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

StatusColors statusColors(const QPalette& palette) {
  StatusColors c;
  if (isDarkPalette(palette)) {
    c.error_background = QColor(74, 28, 28);
    c.error_text = QColor(255, 190, 185);
    c.error_border = QColor(140, 60, 58);
    c.warning_background = QColor(66, 54, 18);
    c.warning_text = QColor(255, 226, 150);
    c.warning_border = QColor(130, 106, 40);
    c.good_text = QColor(120, 220, 130);
    c.bad_text = QColor(255, 140, 135);
    c.dense = QColor(70, 70, 76);
    c.empty = QColor(38, 38, 42);
  } else {
    c.error_background = QColor(253, 236, 234);
    c.error_text = QColor(97, 26, 21);
    c.error_border = QColor(245, 194, 192);
    c.warning_background = QColor(255, 248, 225);
    c.warning_text = QColor(93, 67, 0);
    c.warning_border = QColor(243, 222, 160);
    c.good_text = QColor(27, 94, 32);
    c.bad_text = QColor(176, 0, 32);
    c.dense = QColor(205, 205, 210);
    c.empty = QColor(236, 236, 236);
  }
  return c;
}

QString bannerStyleSheet(const QPalette& palette, const QString& objectName, bool error) {
  const StatusColors c = statusColors(palette);
  const QColor bg = error ? c.error_background : c.warning_background;
  const QColor fg = error ? c.error_text : c.warning_text;
  const QColor border = error ? c.error_border : c.warning_border;
  return QString("QLabel#%1 { background: %2; color: %3; border: 1px solid %4; border-radius: 6px; padding: 6px; }")
      .arg(objectName, bg.name(), fg.name(), border.name());
}

void applyTheme(QApplication& app, ThemeChoice choice) {
  if (choice == ThemeChoice::System) {
    app.setPalette(QPalette());  // a palette with no roles set: back to the platform's
    return;
  }
  if (app.style()->name().compare("fusion", Qt::CaseInsensitive) != 0)
    if (QStyle* fusion = QStyleFactory::create("Fusion")) app.setStyle(fusion);
  app.setPalette(choice == ThemeChoice::Dark ? darkPalette() : lightPalette());
}

ThemeChoice savedTheme(const store::Settings& settings) {
  try {
    if (const auto v = settings.get(kThemeSettingKey)) return themeFromName(QString::fromStdString(*v));
  } catch (const std::exception&) {
    // An unreadable setting: the platform's look.
  }
  return ThemeChoice::System;
}

DimLabel::DimLabel(const QString& text, QWidget* parent) : QLabel(text, parent) { refresh(); }

void DimLabel::changeEvent(QEvent* event) {
  QLabel::changeEvent(event);
  if (event->type() == QEvent::PaletteChange || event->type() == QEvent::ParentChange) refresh();
}

void DimLabel::refresh() {
  if (refreshing_) return;
  refreshing_ = true;
  const QPalette inherited = parentWidget() ? parentWidget()->palette() : QApplication::palette(this);
  QPalette p = palette();
  p.setColor(QPalette::WindowText, inherited.color(QPalette::PlaceholderText));
  setPalette(p);
  refreshing_ = false;
}

}  // namespace inferdesk::gui
