#include "gui/hub/hub_service.h"

#include "core/hub/hub_error.h"
#include "core/hub/token_store.h"

namespace inferdesk::gui {

bool HubFailure::needsToken() const {
  return kind == hub::HubErrorKind::Gated || kind == hub::HubErrorKind::Unauthorized ||
         kind == hub::HubErrorKind::Forbidden;
}

QString HubFailure::html() const {
  if (kind == hub::HubErrorKind::Gated && !model_page.isEmpty()) {
    // core/hub's own message names the CLI's ways to give a token; here the button is the way.
    const QString link = model_page.toHtmlEscaped();
    return QObject::tr("This model is gated: request access at <a href=\"%1\">%1</a>, then enter your Hugging Face "
                       "token (Enter token\u2026).")
        .arg(link);
  }
  return message.toHtmlEscaped();
}

HubFailure hub_failure(const std::exception& e, const hub::HubClient& client, const std::string& repo_id) {
  HubFailure f;
  f.message = QString::fromUtf8(e.what());
  if (const auto* he = dynamic_cast<const hub::HubError*>(&e)) f.kind = he->kind();
  if (!repo_id.empty()) f.model_page = QString::fromStdString(client.model_page(repo_id));
  return f;
}

HubService::HubService(hub::HubEnvironment env, QObject* parent)
    : QObject(parent), env_(std::move(env)), cache_(hub::resolve_cache_dir(env_)), offline_(hub::offline_mode(env_)) {
  // A few calls at once: a search, a model's details and a download's planning never wait for
  // each other, and a slow Hub cannot take every thread of the app.
  pool_.setMaxThreadCount(4);
  download_options_.offline = offline_;
  rebuildClient();
}

HubService::~HubService() { pool_.waitForDone(); }

QString HubService::endpoint() const { return QString::fromStdString(client_->endpoint()); }

void HubService::setAppToken(const QString& token) {
  if (token.trimmed() == app_token_) return;
  app_token_ = token.trimmed();
  rebuildClient();
  emit tokenChanged();
}

QString HubService::tokenSource() const {
  switch (source_) {
    case hub::TokenSource::Explicit: return tr("InferDesk");
    case hub::TokenSource::Environment: return tr("HF_TOKEN");
    case hub::TokenSource::HfTokenFile: return tr("the huggingface_hub token file");
    case hub::TokenSource::AppStore: return tr("InferDesk");
    case hub::TokenSource::None: break;
  }
  return tr("none");
}

void HubService::rebuildClient() {
  hub::ResolvedToken token;
  try {
    token = hub::resolve_token(env_, app_token_.toStdString(), nullptr);
  } catch (const std::exception&) {
    token = hub::ResolvedToken{app_token_.toStdString(),
                               app_token_.isEmpty() ? hub::TokenSource::None : hub::TokenSource::Explicit};
  }
  source_ = token.source;
  hub::HubClientOptions options;
  options.endpoint = hub::resolve_endpoint(env_);
  options.token = token.token;
  options.http.user_agent = "inferdesk-desktop";
  // API calls run on the pool, which the app waits for when it closes: keep each one short.
  options.http.api_timeout = std::chrono::seconds(20);
  options.http.connect_timeout = std::chrono::milliseconds(10000);
  client_ = std::make_shared<const hub::HubClient>(options);
}

}  // namespace inferdesk::gui
