// AppSession: the objects one run of the application shares — the database in the data folder
// and the stores over it, the engine controller on its own thread, and the AppContext that hands
// them to the pages. Destroy the main window before the session.
#pragma once

#include <QString>

#include <memory>

#include "core/backend/cuda_options.h"
#include "gui/app/app_context.h"

namespace inferdesk::store {
class Database;
}

namespace inferdesk::gui {

class EngineThread;

class AppSession {
 public:
  // Opens (creating) data_dir/inferdesk.db, turns replies a crash left streaming into stopped
  // ones, and starts the engine thread. Throws inferdesk::Error (Io / Format; store::DamagedDatabase
  // for a damaged file, which open_data_folder offers to recover) when the database cannot be opened.
  explicit AppSession(const QString& data_dir, const CudaBackendOptions& cuda = {});
  ~AppSession();
  AppSession(const AppSession&) = delete;
  AppSession& operator=(const AppSession&) = delete;

  AppContext& context() { return *ctx_; }
  store::Database& database();
  EngineController* engine();
  // Replies found streaming at start-up (a previous run crashed mid-reply), now marked stopped.
  int recoveredStreams() const { return recovered_; }

 private:
  struct Stores;
  std::unique_ptr<Stores> stores_;
  std::unique_ptr<EngineThread> engine_;
  std::unique_ptr<AppContext> ctx_;
  int recovered_ = 0;
};

}  // namespace inferdesk::gui
