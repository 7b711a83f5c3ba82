#include "gui/app/app_menu.h"

#include <QAction>
#include <QMenu>
#include <QMenuBar>

namespace inferdesk::gui {

QList<QAction*> MenuCommands::all() const {
  QList<QAction*> list{newChat, importChat,    exportChat, settings, quit,
                       find,    focusComposer, deleteChat, stop,     regenerate};
  list << downloadModel << hubToken << pages << downloads << shortcuts << about;
  list.removeAll(nullptr);
  return list;
}

void buildMenuBar(QMenuBar* bar, const MenuCommands& c) {
  auto add = [](QMenu* menu, std::initializer_list<QAction*> actions) {
    for (QAction* a : actions)
      if (a) menu->addAction(a);
  };
  QMenu* file = bar->addMenu(QObject::tr("&File"));
  add(file, {c.newChat, c.importChat, c.exportChat});
  file->addSeparator();
  add(file, {c.downloadModel, c.hubToken});
  file->addSeparator();
  add(file, {c.settings});
  file->addSeparator();
  add(file, {c.quit});
  QMenu* edit = bar->addMenu(QObject::tr("&Edit"));
  add(edit, {c.find, c.focusComposer, c.deleteChat});
  QMenu* chat = bar->addMenu(QObject::tr("&Chat"));
  add(chat, {c.stop, c.regenerate});
  QMenu* view = bar->addMenu(QObject::tr("&View"));
  for (QAction* a : c.pages) view->addAction(a);
  add(view, {c.downloads});
  QMenu* help = bar->addMenu(QObject::tr("&Help"));
  add(help, {c.downloadModel});  // the first step for someone with no model yet
  add(help, {c.shortcuts, c.about});
  for (QMenu* m : {file, edit, chat, view, help}) m->menuAction()->setVisible(!m->isEmpty());
}

QString shortcutsTable(const MenuCommands& commands) {
  QString rows;
  for (QAction* a : commands.all()) {
    if (a->shortcut().isEmpty()) continue;
    QString name = a->text();
    name.remove('&');
    rows += QString("<tr><td>%1</td><td>&nbsp;&nbsp;<b>%2</b></td></tr>")
                .arg(name.toHtmlEscaped(), a->shortcut().toString(QKeySequence::NativeText).toHtmlEscaped());
  }
  return "<table>" + rows + "</table>";
}

}  // namespace inferdesk::gui
