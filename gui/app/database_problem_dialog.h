// Start-up with a database that cannot be opened: the dialog that says why and offers what can be
// done (recover a damaged file into a new one, use another data folder, quit), and the loop that
// acts on the choice until the data opens or the user quits. No window exists yet at this point.
#pragma once

#include <QDialog>
#include <QString>

#include <functional>

class QPushButton;

namespace inferdesk::gui {

enum class DatabaseChoice { Recover, ChooseFolder, Quit };

class DatabaseProblemDialog : public QDialog {
  Q_OBJECT

 public:
  // `recoverable`: the file is ours but damaged (store::DamagedDatabase), so Recover is offered.
  DatabaseProblemDialog(const QString& databasePath, const QString& error, bool recoverable, QWidget* parent = nullptr);
  DatabaseChoice choice() const { return choice_; }
  QString text() const { return text_; }
  QPushButton* recoverButton() const { return recover_; }  // nullptr when not recoverable
  QPushButton* folderButton() const { return folder_; }
  QPushButton* quitButton() const { return quit_; }

 private:
  DatabaseChoice choice_ = DatabaseChoice::Quit;  // also when the dialog is closed
  QString text_;
  QPushButton* recover_ = nullptr;
  QPushButton* folder_ = nullptr;
  QPushButton* quit_ = nullptr;
};

// What the start-up asks the user; the defaults (interactive_prompts) show dialogs, tests script them.
struct StartupPrompts {
  std::function<DatabaseChoice(const QString& databasePath, const QString& error, bool recoverable)> ask;
  std::function<QString(const QString& currentFolder)> choose_folder;  // "" = cancelled
  std::function<void(const QString& title, const QString& text)> inform;
};
StartupPrompts interactive_prompts();

// Calls open(data_dir) (which opens the database there and throws inferdesk::Error when it cannot)
// until it succeeds, asking the user after each failure: Recover runs store::recover_in_place on
// the damaged file and tries again, ChooseFolder tries the chosen folder. Each failure is written
// to stderr too. Returns the data folder that opened, or "" when the user chose Quit.
QString open_data_folder(const QString& data_dir, const std::function<void(const QString&)>& open,
                         const StartupPrompts& prompts);

}  // namespace inferdesk::gui
