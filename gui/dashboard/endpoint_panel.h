// EndpointPanel: the saved endpoints (store::EndpointStore; API keys in the key file beside the
// database) with a form to add, edit and remove them, "Test connection" (probe_endpoint on a
// worker thread: engine, version and models, or the typed error's reason), and the embedded
// engine as a built-in target while a model is loaded (served on localhost by its own
// ServerController when a run starts).
#pragma once

#include <QFutureWatcher>
#include <QWidget>

#include <optional>

#include "core/remote/probe.h"
#include "gui/app/app_context.h"
#include "gui/dashboard/dashboard_runner.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;

namespace inferdesk::gui {

class EndpointPanel : public QWidget {
  Q_OBJECT

 public:
  explicit EndpointPanel(AppContext& ctx, QWidget* parent = nullptr);
  ~EndpointPanel() override;

  static QString builtinName() { return tr("InferDesk (embedded engine)"); }
  void reload();
  bool selectByName(const QString& name);
  bool builtinSelected() const;
  // The form's endpoint as a run target (engine and version from the last probe).
  RunTarget currentTarget() const;
  // Saves the form (adds or updates by name); false with errorMessage emitted when refused.
  bool saveForm();
  bool removeSelected();
  void testConnection();
  bool probing() const;
  QLabel* probeLabel() const { return probe_label_; }
  QListWidget* list() const { return list_; }
  void setForm(const QString& name, const QString& url, const QString& model, const QString& key = {});

 signals:
  void errorMessage(const QString& text);
  void probed(bool ok);

 private:
  void showSelected();
  void onProbed();
  QString keyPath() const;

  AppContext& ctx_;
  QListWidget* list_ = nullptr;
  QLineEdit *name_ = nullptr, *url_ = nullptr, *model_ = nullptr, *key_ = nullptr, *flags_ = nullptr;
  QComboBox* kind_ = nullptr;
  QPushButton *save_ = nullptr, *remove_ = nullptr, *test_ = nullptr;
  QLabel* probe_label_ = nullptr;
  QFutureWatcher<std::pair<std::optional<remote::ProbeResult>, QString>>* watcher_ = nullptr;
  std::optional<remote::ProbeResult> last_probe_;
};

}  // namespace inferdesk::gui
