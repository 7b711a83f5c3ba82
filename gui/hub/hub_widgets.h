// Small widget helpers the Hub's pages and panel share.
#pragma once

#include <QString>

class QAbstractItemModel;
class QLabel;
class QTreeView;

namespace inferdesk::gui {

// A wrapping rich-text label whose links open in the desktop's browser (a gated model's page).
QLabel* make_link_label(const QString& object_name);
// A view of DownloadsModel rows: uniform rows, the name stretched, the other columns fitted.
void setup_downloads_view(QTreeView* view, QAbstractItemModel* model);

}  // namespace inferdesk::gui
