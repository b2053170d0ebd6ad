//! Planned step kind against actual step kind (seed 003's second plan, as
//! Pulumi's saved plans apply it): a step may turn out as planned or
//! smaller — a create, update or replacement may turn out unchanged, a
//! replacement an update — never otherwise.

use crate::events::StepOp;

/// An apply would take a step the plan does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the plan has {planned} but the update would {actual}")]
pub struct StepKindViolation {
    pub planned: StepOp,
    pub actual: StepOp,
}

/// The steps of one replacement (any of them stands for the family).
fn replace_family(op: StepOp) -> bool {
    matches!(
        op,
        StepOp::Replace
            | StepOp::CreateReplacement
            | StepOp::DeleteReplaced
            | StepOp::RemovePendingReplace
    )
}

/// Checks that `actual` is allowed where the plan has `planned`.
pub fn check_step_kind(planned: StepOp, actual: StepOp) -> Result<(), StepKindViolation> {
    let allowed = planned == actual
        || (replace_family(planned) && replace_family(actual))
        || (actual == StepOp::Same
            && (matches!(planned, StepOp::Create | StepOp::Update) || replace_family(planned)))
        || (actual == StepOp::Update && replace_family(planned));
    if allowed {
        Ok(())
    } else {
        Err(StepKindViolation { planned, actual })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_may_stay_itself() {
        for op in [
            StepOp::Same,
            StepOp::Create,
            StepOp::Update,
            StepOp::Delete,
            StepOp::Replace,
            StepOp::Read,
            StepOp::Import,
            StepOp::Refresh,
        ] {
            assert_eq!(check_step_kind(op, op), Ok(()));
        }
    }

    #[test]
    fn create_and_update_may_turn_out_unchanged() {
        assert_eq!(check_step_kind(StepOp::Create, StepOp::Same), Ok(()));
        assert_eq!(check_step_kind(StepOp::Update, StepOp::Same), Ok(()));
    }

    #[test]
    fn the_replace_family_may_become_an_update_or_unchanged() {
        for planned in [
            StepOp::Replace,
            StepOp::CreateReplacement,
            StepOp::DeleteReplaced,
        ] {
            assert_eq!(check_step_kind(planned, StepOp::Update), Ok(()));
            assert_eq!(check_step_kind(planned, StepOp::Same), Ok(()));
            assert_eq!(check_step_kind(planned, StepOp::Replace), Ok(()));
        }
    }

    #[test]
    fn growing_or_changing_a_step_is_a_violation() {
        for (planned, actual) in [
            (StepOp::Same, StepOp::Update),
            (StepOp::Same, StepOp::Create),
            (StepOp::Update, StepOp::Replace),
            (StepOp::Update, StepOp::CreateReplacement),
            (StepOp::Create, StepOp::Update),
            (StepOp::Same, StepOp::Delete),
            (StepOp::Delete, StepOp::Same),
            (StepOp::Update, StepOp::Delete),
        ] {
            let err = check_step_kind(planned, actual).unwrap_err();
            assert_eq!(err, StepKindViolation { planned, actual });
            assert!(err.to_string().contains(planned.as_str()), "{err}");
        }
    }
}
