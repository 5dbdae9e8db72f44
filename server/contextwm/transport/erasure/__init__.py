"""The transport of erasure: Forget and DeleteConversation, with their receipts."""
