//! The question an operation asks before it changes anything.

use anyhow::Result;

/// Asks `question` at the terminal and proceeds on `yes` or `y`. Asked
/// from a blocking thread, so that the operation's other tasks (plugins'
/// output, say) go on meanwhile; a Ctrl-C while it waits cancels the
/// command, nothing having changed yet.
pub(crate) async fn confirm(question: &str) -> Result<()> {
    let question = question.to_owned();
    tokio::task::spawn_blocking(move || {
        crate::prompt::confirm(&question, "confirmation declined, not proceeding")
    })
    .await?
}

/// [`confirm`], with Pulumi's third answer: `details` (or `d`) prints
/// `details` (the preview's steps with their property diffs) and asks
/// again.
pub(crate) async fn confirm_with_details(question: &str, details: Vec<String>) -> Result<()> {
    let question = question.to_owned();
    tokio::task::spawn_blocking(move || {
        crate::prompt::confirm_or_details(
            &question,
            "confirmation declined, not proceeding",
            &details,
        )
    })
    .await?
}
