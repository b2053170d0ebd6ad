//! Reading: refresh (`ReadResource`) and import (`ImportResourceState`
//! then `ReadResource`).

use super::*;

impl TerraformProvider {
    /// Inputs of an imported object: the attributes a configuration may
    /// set that it has.
    pub(super) fn inputs_of(&self, member: &Member, state: &PropertyMap) -> PropertyMap {
        let block = &member.schema.block;
        let configurable: PropertyMap = state
            .iter()
            .filter(|(k, v)| {
                !matches!(v, PropertyValue::Null)
                    && (block.blocks.contains_key(*k)
                        || block
                            .attributes
                            .get(*k)
                            .is_some_and(|a| a.required || a.optional))
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        tf_to_pulumi(block, &configurable, &SecretAttrs::new())
    }

    pub(super) async fn read_resource(
        &self,
        s: &Session,
        urn: &Urn,
        member: &Member,
        current: &PropertyMap,
        private: Vec<u8>,
    ) -> Result<Option<(PropertyMap, Vec<u8>)>, ProviderError> {
        let ty = object_type(member);
        let response = s
            .client()
            .read_resource(tf::read_resource::Request {
                type_name: member.tf_type.clone(),
                current_state: Some(encode(Some(current), &ty)?),
                private,
                provider_meta: null_meta(),
            })
            .await
            .map_err(|e| s.rpc_error("ReadResource", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(&member.schema.block));
        self.warn(&findings, Some(urn));
        if findings.has_errors() {
            return Err(failed(findings.error_lines().join("; ")));
        }
        Ok(decode(response.new_state.as_ref(), &ty)?.map(|state| (state, response.private)))
    }

    /// `ImportResourceState` then `ReadResource`: the object `req.id`
    /// names, or none (an empty ID) when it does not exist.
    pub(super) async fn import(
        &self,
        s: &Session,
        req: &ReadRequest,
        member: &Member,
    ) -> Result<ReadResponse, ProviderError> {
        let ty = object_type(member);
        let response = s
            .client()
            .import_resource_state(tf::import_resource_state::Request {
                type_name: member.tf_type.clone(),
                id: req.id.clone(),
            })
            .await
            .map_err(|e| s.rpc_error("ImportResourceState", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(&member.schema.block));
        self.warn(&findings, Some(&req.urn));
        if findings.has_errors() {
            return Err(failed(findings.error_lines().join("; ")));
        }
        let Some(imported) = response
            .imported_resources
            .iter()
            .find(|r| r.type_name == member.tf_type)
        else {
            return Ok(ReadResponse::default());
        };
        let Some(stub) = decode(imported.state.as_ref(), &ty)? else {
            return Ok(ReadResponse::default());
        };
        let Some((state, private)) = self
            .read_resource(s, &req.urn, member, &stub, imported.private.clone())
            .await?
        else {
            return Ok(ReadResponse::default());
        };
        Ok(ReadResponse {
            id: id_of(&state).unwrap_or_else(|| req.id.clone()),
            inputs: self.inputs_of(member, &state),
            properties: self.outputs(member, &state, &SecretAttrs::new(), &private),
        })
    }
}
