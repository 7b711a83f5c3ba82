#include "gui/app/app_session.h"

#include "core/store/store.h"
#include "gui/app/app_paths.h"
#include "gui/engine/engine_controller.h"

namespace inferdesk::gui {

struct AppSession::Stores {
  explicit Stores(const QString& file) : db(file.toStdString()), chats(db), models(db), settings(db) {}
  store::Database db;
  store::ChatStore chats;
  store::ModelRegistry models;
  store::Settings settings;
};

AppSession::AppSession(const QString& data_dir, const CudaBackendOptions& cuda) {
  stores_ = std::make_unique<Stores>(database_path(data_dir));
  recovered_ = stores_->chats.mark_interrupted_streams();
  engine_ = std::make_unique<EngineThread>(cuda);
  ctx_.reset(new AppContext{
      stores_->db, stores_->chats, stores_->models, stores_->settings, engine_->controller(), data_dir, {}});
}

AppSession::~AppSession() {
  ctx_.reset();
  engine_.reset();  // unloads the model and joins the controller thread
  stores_.reset();
}

store::Database& AppSession::database() { return stores_->db; }

EngineController* AppSession::engine() { return engine_->controller(); }

}  // namespace inferdesk::gui
