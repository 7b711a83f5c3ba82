// ReferenceView: the published comparison (reference_data.h) as two tables — engines
// (quantization, hardware, setup, latency claimed) and published figures with their conditions
// and sources — under a banner saying these are published, not measured here.
#pragma once

#include <QWidget>

#include "gui/dashboard/reference_data.h"

class QTableWidget;

namespace inferdesk::gui {

class ReferenceView : public QWidget {
  Q_OBJECT

 public:
  explicit ReferenceView(const ReferenceData& data, QWidget* parent = nullptr);
  QTableWidget* engines() const { return engines_; }
  QTableWidget* figures() const { return figures_; }

 private:
  QTableWidget* engines_ = nullptr;
  QTableWidget* figures_ = nullptr;
};

}  // namespace inferdesk::gui
