#include "gui/hub/hub_widgets.h"

#include <QHeaderView>
#include <QLabel>
#include <QTreeView>

#include "gui/hub/downloads_model.h"

namespace inferdesk::gui {

QLabel* make_link_label(const QString& object_name) {
  auto* label = new QLabel();
  label->setObjectName(object_name);
  label->setWordWrap(true);
  label->setOpenExternalLinks(true);
  label->setTextInteractionFlags(Qt::TextBrowserInteraction);
  return label;
}

void setup_downloads_view(QTreeView* view, QAbstractItemModel* model) {
  view->setModel(model);
  view->setUniformRowHeights(true);
  view->header()->setStretchLastSection(false);
  view->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  view->header()->setSectionResizeMode(DownloadsModel::Name, QHeaderView::Stretch);
}

}  // namespace inferdesk::gui
