//! `pulumi:index:Stash`: a value kept in the state. Its one input is
//! `input`; its outputs are `input` (the value the program last gave) and
//! `output` (the value it had when the stash was created). A new `input`
//! is an update that changes `input` alone: `output` changes only when the
//! stash is replaced (`--replace`, `replaceOnChanges`, a new provider).
//! Nothing exists outside the state, so a delete only forgets it.

use converge_model::{PropertyMap, PropertyValue};
use converge_plugin::{
    CheckRequest, CheckResponse, CreateRequest, CreateResponse, DiffChanges, DiffRequest,
    DiffResponse, ReadRequest, ReadResponse, UpdateRequest, UpdateResponse,
};

/// The stash resource's type.
pub const STASH: &str = "pulumi:index:Stash";

const INPUT: &str = "input";
const OUTPUT: &str = "output";

/// The program's inputs, `input` alone: the SDKs also send the output
/// `output`, unset.
pub(super) fn check(req: CheckRequest) -> CheckResponse {
    CheckResponse {
        inputs: req.news.into_iter().filter(|(k, _)| k == INPUT).collect(),
        failures: Vec::new(),
    }
}

/// A new `input` is an update, never a replacement.
pub(super) fn diff(req: &DiffRequest) -> DiffResponse {
    if req.old_inputs.get(INPUT) == req.new_inputs.get(INPUT) {
        return DiffResponse::none();
    }
    DiffResponse {
        changes: DiffChanges::Some,
        changed_keys: vec![INPUT.to_owned()],
        ..DiffResponse::default()
    }
}

/// The stashed value is the input at creation.
pub(super) fn create(req: CreateRequest) -> CreateResponse {
    let value = input_of(&req.properties);
    let id = if req.preview {
        String::new()
    } else {
        uuid::Uuid::new_v4().to_string()
    };
    CreateResponse {
        id,
        properties: outputs(value.clone(), value),
    }
}

/// The new input is recorded; the stashed value stays.
pub(super) fn update(req: UpdateRequest) -> UpdateResponse {
    let stashed = req
        .old_outputs
        .get(OUTPUT)
        .cloned()
        .unwrap_or_else(|| input_of(&req.old_inputs));
    UpdateResponse {
        properties: outputs(input_of(&req.new_inputs), stashed),
    }
}

/// What the state holds is all there is: a refresh finds it unchanged.
pub(super) fn read(req: ReadRequest) -> ReadResponse {
    let inputs = req.inputs.unwrap_or_default();
    let properties = req.state.unwrap_or_else(|| {
        let value = input_of(&inputs);
        outputs(value.clone(), value)
    });
    ReadResponse {
        id: req.id,
        inputs,
        properties,
    }
}

fn input_of(inputs: &PropertyMap) -> PropertyValue {
    inputs.get(INPUT).cloned().unwrap_or(PropertyValue::Null)
}

fn outputs(input: PropertyValue, output: PropertyValue) -> PropertyMap {
    PropertyMap::from([(INPUT.to_owned(), input), (OUTPUT.to_owned(), output)])
}
