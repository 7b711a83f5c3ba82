// The main window's menu bar: every command the window offers, each with the shortcut desktop
// users expect, listed in the menus so the keyboard can be discovered (File: New chat Ctrl+N,
// Import Ctrl+O, Export Ctrl+E, Settings Ctrl+, Quit Ctrl+Q; Edit: Find chats Ctrl+F, Go to the
// message box Ctrl+L, Delete chat Del in the chat list; Chat: Stop Esc, Regenerate Ctrl+Shift+R;
// View: the pages Ctrl+1..3, Downloads Ctrl+J; Help: Download a model Ctrl+D, Keyboard shortcuts
// F1, About; File also lists Download a model and the Hugging Face token). The actions belong to their
// owners (the chat page's to ChatPage); this only arranges them.
#pragma once

#include <QList>
#include <QString>

class QAction;
class QMenuBar;

namespace inferdesk::gui {

struct MenuCommands {
  QAction* newChat = nullptr;
  QAction* importChat = nullptr;
  QAction* exportChat = nullptr;
  QAction* settings = nullptr;
  QAction* quit = nullptr;
  QAction* find = nullptr;
  QAction* focusComposer = nullptr;
  QAction* deleteChat = nullptr;
  QAction* stop = nullptr;
  QAction* regenerate = nullptr;
  QList<QAction*> pages;             // Chat, Models, Performance
  QAction* downloadModel = nullptr;  // the Hub's download wizard (gui/hub)
  QAction* downloads = nullptr;      // the downloads panel
  QAction* hubToken = nullptr;       // the Hugging Face token dialog
  QAction* shortcuts = nullptr;
  QAction* about = nullptr;
  QList<QAction*> all() const;  // in menu order, without nulls
};

// Fills `bar` with File, Edit, Chat, View and Help menus (null commands are left out).
void buildMenuBar(QMenuBar* bar, const MenuCommands& commands);

// An HTML table of every command with a shortcut, for the Keyboard shortcuts dialog.
QString shortcutsTable(const MenuCommands& commands);

}  // namespace inferdesk::gui
