// The model manager's table: one row per registered model folder (store::ModelRegistry), with the
// facts the registry keeps for it and whether it is loaded. Rows change through upsert / remove /
// setState, which emit the matching row signals (rowsInserted, rowsRemoved, dataChanged).
#pragma once

#include <QAbstractTableModel>

#include <optional>
#include <vector>

#include "gui/models/model_facts.h"

namespace inferdesk::gui {

struct ModelRow {
  qint64 id = 0;  // registry id
  QString display_name;
  QString path;
  std::optional<ModelFacts> facts;  // absent when the registry's record could not be read
  QString state;                    // "", "loading 40%", "loaded on CPU", ...
};

class ModelTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    Name,
    Architecture,
    Parameters,
    ActiveParameters,
    DType,
    Context,
    SizeOnDisk,
    ChatTemplate,
    State,
    ColumnCount
  };
  enum Role { IdRole = Qt::UserRole + 1, PathRole };

  explicit ModelTableModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  void setRows(std::vector<ModelRow> rows);  // model reset
  // Inserts a row for a new id (appended) or updates the row with this id (dataChanged).
  void upsert(const ModelRow& row);
  void remove(qint64 id);
  // Sets the State column of the row with this id and clears it on every other row when
  // `exclusive` (only one model is loaded at a time).
  void setState(qint64 id, const QString& state, bool exclusive = true);
  void clearStates();

  int rowOf(qint64 id) const;  // -1 when absent
  const ModelRow* rowAt(int row) const;
  const ModelRow* find(qint64 id) const;

 private:
  std::vector<ModelRow> rows_;
};

}  // namespace inferdesk::gui
