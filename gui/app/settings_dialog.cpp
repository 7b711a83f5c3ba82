#include "gui/app/settings_dialog.h"

#include <QApplication>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QVBoxLayout>

#include <exception>

#include "core/store/store.h"
#include "gui/app/theme.h"
#include "gui/models/last_model.h"

namespace inferdesk::gui {

SettingsDialog::SettingsDialog(AppContext& ctx, QWidget* parent) : QDialog(parent), ctx_(ctx) {
  setObjectName("settingsDialog");
  setWindowTitle(tr("Settings"));
  setMinimumWidth(420);
  auto* v = new QVBoxLayout(this);
  auto* form = new QFormLayout();
  theme_ = new QComboBox(this);
  theme_->addItem(tr("Follow the system"), themeName(ThemeChoice::System));
  theme_->addItem(tr("Light"), themeName(ThemeChoice::Light));
  theme_->addItem(tr("Dark"), themeName(ThemeChoice::Dark));
  theme_->setCurrentIndex(theme_->findData(themeName(savedTheme(ctx_.settings))));
  form->addRow(tr("Appearance"), theme_);
  startup_ = new QComboBox(this);
  startup_->addItem(tr("Offer to load the last model"), startupModelName(StartupModel::Offer));
  startup_->addItem(tr("Load the last model"), startupModelName(StartupModel::Load));
  startup_->addItem(tr("Do nothing"), startupModelName(StartupModel::Nothing));
  startup_->setCurrentIndex(startup_->findData(startupModelName(LastModelMemory(ctx_.settings).policy())));
  form->addRow(tr("At start"), startup_);
  v->addLayout(form);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  v->addWidget(buttons);

  connect(theme_, &QComboBox::currentIndexChanged, this, [this] {
    const ThemeChoice choice = themeFromName(theme_->currentData().toString());
    if (auto* app = qobject_cast<QApplication*>(QCoreApplication::instance())) applyTheme(*app, choice);
    if (ctx_.db.read_only()) return;
    try {
      ctx_.settings.set(kThemeSettingKey, themeName(choice).toStdString());
    } catch (const std::exception& e) {
      emit errorOccurred(tr("could not save the appearance: %1").arg(e.what()));
    }
  });
  connect(startup_, &QComboBox::currentIndexChanged, this, [this] {
    if (!ctx_.db.read_only())
      LastModelMemory(ctx_.settings).setPolicy(startupModelFromName(startup_->currentData().toString()));
  });
}

}  // namespace inferdesk::gui
