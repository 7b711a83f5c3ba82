#include "gui/app/database_problem_dialog.h"

#include <QApplication>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QVBoxLayout>

#include <cstdio>
#include <exception>

#include "core/store/recover.h"
#include "core/store/store.h"
#include "gui/app/app_paths.h"

namespace inferdesk::gui {
namespace {

// How to use another folder, in both of the ways there are (the app has no file name to choose).
QString other_folder_hint() {
  return QObject::tr("To keep InferDesk's data in another folder, press Choose another folder, or start InferDesk with "
                     "--data-dir DIR.");
}

QString dialog_text(const QString& databasePath, const QString& error, bool recoverable) {
  const QString folder = QFileInfo(databasePath).absolutePath();
  QString text = recoverable ? QObject::tr("The database %1 is damaged.").arg(databasePath)
                             : QObject::tr("InferDesk cannot open its data in %1.").arg(folder);
  text += "\n\n" + error + "\n\n";
  if (recoverable)
    text += QObject::tr("Recover into a new file: InferDesk copies what is still readable into a new database and "
                        "keeps the damaged file beside it, unchanged, as %1.")
                .arg(QFileInfo(QString::fromStdString(store::free_sibling(databasePath.toStdString(), "damaged")))
                         .fileName()) +
            "\n\n";
  return text + other_folder_hint() + "\n\n" + QObject::tr("Quit leaves everything as it is.");
}

}  // namespace

DatabaseProblemDialog::DatabaseProblemDialog(const QString& databasePath, const QString& error, bool recoverable,
                                             QWidget* parent)
    : QDialog(parent), text_(dialog_text(databasePath, error, recoverable)) {
  setObjectName("databaseProblemDialog");
  setWindowTitle(recoverable ? tr("InferDesk: damaged database") : tr("InferDesk: cannot open the data"));
  setMinimumWidth(520);
  auto* v = new QVBoxLayout(this);
  auto* label = new QLabel(text_, this);
  label->setObjectName("databaseProblemText");
  label->setWordWrap(true);
  label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(label);
  auto* buttons = new QDialogButtonBox(this);
  auto add = [&](const QString& caption, DatabaseChoice choice, QDialogButtonBox::ButtonRole role) {
    QPushButton* b = buttons->addButton(caption, role);
    connect(b, &QPushButton::clicked, this, [this, choice] {
      choice_ = choice;
      choice == DatabaseChoice::Quit ? reject() : accept();
    });
    return b;
  };
  if (recoverable) recover_ = add(tr("Recover into a new file"), DatabaseChoice::Recover, QDialogButtonBox::AcceptRole);
  folder_ = add(tr("Choose another folder…"), DatabaseChoice::ChooseFolder, QDialogButtonBox::ActionRole);
  quit_ = add(tr("Quit"), DatabaseChoice::Quit, QDialogButtonBox::RejectRole);
  (recover_ != nullptr ? recover_ : folder_)->setDefault(true);
  v->addWidget(buttons);
}

StartupPrompts interactive_prompts() {
  StartupPrompts p;
  p.ask = [](const QString& path, const QString& error, bool recoverable) {
    DatabaseProblemDialog dialog(path, error, recoverable);
    dialog.exec();
    return dialog.choice();
  };
  p.choose_folder = [](const QString& current) {
    return QFileDialog::getExistingDirectory(nullptr, QObject::tr("Folder for InferDesk's data"), current);
  };
  p.inform = [](const QString& title, const QString& text) { QMessageBox::information(nullptr, title, text); };
  return p;
}

namespace {

// Runs store::recover_in_place on the damaged file and tells the user what came of it.
void recover(const QString& databasePath, const StartupPrompts& prompts) {
  try {
    QApplication::setOverrideCursor(Qt::WaitCursor);
    const store::RecoveryReport report = store::recover_in_place(databasePath.toStdString());
    QApplication::restoreOverrideCursor();
    prompts.inform(QObject::tr("InferDesk: database recovered"),
                   QString::fromStdString(report.summary()) + "\n\n" +
                       QObject::tr("The damaged file is kept, unchanged, as %1.")
                           .arg(QString::fromStdString(report.source.string())));
  } catch (const std::exception& e) {
    QApplication::restoreOverrideCursor();
    std::fprintf(stderr, "inferdesk: %s\n", e.what());
    prompts.inform(QObject::tr("InferDesk: recovery failed"), QString::fromUtf8(e.what()));
  }
}

}  // namespace

QString open_data_folder(const QString& data_dir, const std::function<void(const QString&)>& open,
                         const StartupPrompts& prompts) {
  QString dir = data_dir;
  for (;;) {
    QString error;
    bool recoverable = false;
    try {
      open(dir);
      return dir;
    } catch (const store::DamagedDatabase& e) {
      error = QString::fromUtf8(e.what());
      recoverable = true;
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
    }
    const QString path = database_path(dir);
    std::fprintf(stderr,
                 "inferdesk: cannot open the data in %s: %s\n(start with --data-dir DIR to use another folder)\n",
                 qPrintable(dir), qPrintable(error));
    switch (prompts.ask(path, error, recoverable)) {
      case DatabaseChoice::Quit: return {};
      case DatabaseChoice::Recover: recover(path, prompts); break;
      case DatabaseChoice::ChooseFolder: {
        const QString chosen = prompts.choose_folder(dir);
        if (chosen.isEmpty()) break;  // cancelled: ask again
        QString why;
        const QString resolved = resolve_data_dir(chosen, &why);
        if (resolved.isEmpty()) {
          prompts.inform(QObject::tr("InferDesk"), why);
        } else {
          dir = resolved;
        }
        break;
      }
    }
  }
}

}  // namespace inferdesk::gui
