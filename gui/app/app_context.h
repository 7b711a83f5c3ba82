// AppContext: what every page of the main window shares. Built once by the application (main.cpp /
// MainWindow's owner) and passed by reference to each page's constructor, e.g.
// ChatPage(AppContext&, QWidget* parent). Pages must not keep copies of the referenced objects
// beyond the context's lifetime (the main window owns the pages, the application owns the context).
//
// Threading: everything here lives on the GUI thread, except that `engine` is a QObject that runs
// on its own thread (gui/engine/engine_controller.h): talk to it through its signals and slots (and
// the methods it documents as thread-safe).
#pragma once

#include <functional>

#include <QString>

namespace inferdesk::store {
class Database;
class ChatStore;
class ModelRegistry;
class Settings;
}  // namespace inferdesk::store

namespace inferdesk::gui {

class EngineController;

// The pages of the main window, in sidebar order.
enum class Page { Chat = 0, Models = 1, Performance = 2, Dashboard = 3 };

struct AppContext {
  store::Database& db;
  store::ChatStore& chats;
  store::ModelRegistry& models;
  store::Settings& settings;
  EngineController* engine = nullptr;  // owned by the application; never null in the app
  QString data_dir;                    // absolute; holds the database and per-user files
  // Switches the main window to a page (e.g. the chat page's "load a model first" link to Models).
  // Empty where no main window exists (a page tested on its own).
  std::function<void(Page)> show_page;
};

}  // namespace inferdesk::gui
