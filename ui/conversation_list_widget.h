// ConversationListWidget: the saved conversations, most recent first, with a
// search field (Ctrl+F; matches titles and message text) and New / Rename /
// Delete buttons. Rename and Delete (after a confirmation) act on the
// ChatStore directly; New only asks (newRequested), as the main window owns
// what a new chat means. Without a usable store it shows why and disables
// itself; the rest of the app is unaffected.
#pragma once

#include <QWidget>

class QLabel;
class QLineEdit;
class QListWidget;
class QListWidgetItem;
class QPushButton;

namespace kvscope::ui {

class ChatStore;

class ConversationListWidget : public QWidget {
  Q_OBJECT
 public:
  explicit ConversationListWidget(QWidget* parent = nullptr);

  // `store` may be null or closed; it must outlive this widget.
  void setStore(ChatStore* store);
  qint64 currentConversation() const;
  QString currentTitle() const;
  int count() const;
  QLineEdit* searchField() const { return search_; }
  // The conversation the window has open (a click on a row opens it without
  // a refresh): a search keeps it selected once it is listed again.
  void setOpenConversation(qint64 id) { open_id_ = id; }

 public slots:
  // Reloads the list (keeping the search), selecting `select_id` if listed.
  void refresh(qint64 select_id = -1);
  void renameCurrent();
  // Asks for confirmation unless `confirm` is false.
  void deleteCurrent(bool confirm = true);

 signals:
  void conversationSelected(qint64 id);
  void conversationDeleted(qint64 id);
  void newRequested();
  void storeError(const QString& message);

 private:
  void onCurrentItemChanged(QListWidgetItem* item);
  void updateButtons();

  ChatStore* store_ = nullptr;
  QLineEdit* search_ = nullptr;
  QListWidget* list_ = nullptr;
  QLabel* notice_ = nullptr;
  QPushButton* new_ = nullptr;
  QPushButton* rename_ = nullptr;
  QPushButton* delete_ = nullptr;
  bool refreshing_ = false;  // no conversationSelected while the list is rebuilt
  qint64 open_id_ = -1;      // the conversation the window has open (refresh's select_id)
};

}  // namespace kvscope::ui
