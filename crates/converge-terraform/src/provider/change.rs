//! Planning and applying: the prior state upgraded, the plan checked by
//! seed 003's planning rule, the final plan checked against the first,
//! the apply checked by the apply rule.

use super::*;

impl TerraformProvider {
    /// Recorded outputs, upgraded to the current schema version
    /// (`UpgradeResourceState`, on every prior state before it is used).
    pub(super) async fn prior(
        &self,
        s: &Session,
        urn: &Urn,
        member: &Member,
        outputs: &PropertyMap,
    ) -> Result<Prior, ProviderError> {
        let meta = Meta::read(outputs);
        let (raw, secrets) = state_to_tf(&member.schema.block, outputs);
        let version = meta.schema_version.unwrap_or(0);
        let response = s
            .client()
            .upgrade_resource_state(tf::upgrade_resource_state::Request {
                type_name: member.tf_type.clone(),
                version,
                raw_state: Some(tf::RawState {
                    json: raw_state_json(&raw),
                    flatmap: Default::default(),
                }),
            })
            .await
            .map_err(|e| s.rpc_error("UpgradeResourceState", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(&member.schema.block));
        self.warn(&findings, Some(urn));
        if findings.has_errors() {
            return Err(failed(format!(
                "{urn}: could not upgrade its state from schema version {version} to {}: {}",
                member.schema.version,
                findings.error_lines().join("; ")
            )));
        }
        let state = decode(response.upgraded_state.as_ref(), &object_type(member))?
            .ok_or_else(|| failed(format!("{urn}: UpgradeResourceState returned no state")))?;
        Ok(Prior {
            state,
            secrets,
            private: meta.private,
        })
    }

    /// `PlanResourceChange`, checked by seed 003's planning rule.
    pub(super) async fn plan(
        &self,
        s: &Session,
        urn: &Urn,
        member: &Member,
        prior: Option<&Prior>,
        config: &PropertyMap,
    ) -> Result<Plan, ProviderError> {
        let ty = object_type(member);
        let prior_state = prior.map(|p| &p.state);
        let proposed = proposed_new(&member.schema.block, prior_state, config);
        let response = s
            .client()
            .plan_resource_change(tf::plan_resource_change::Request {
                type_name: member.tf_type.clone(),
                prior_state: Some(encode(prior_state, &ty)?),
                proposed_new_state: Some(encode(Some(&proposed), &ty)?),
                config: Some(encode(Some(config), &ty)?),
                prior_private: prior.map(|p| p.private.clone()).unwrap_or_default(),
                provider_meta: null_meta(),
            })
            .await
            .map_err(|e| s.rpc_error("PlanResourceChange", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(&member.schema.block));
        self.warn(&findings, Some(urn));
        if findings.has_errors() {
            return Err(failed(findings.error_lines().join("; ")));
        }
        let planned = decode(response.planned_state.as_ref(), &ty)?.ok_or_else(|| {
            failed(format!(
                "provider {} planned to destroy {urn} when asked to create or update it",
                self.package
            ))
        })?;
        self.subject(urn, member)
            .check_plan(config, prior_state, &planned)
            .map_err(failed)?;
        let requires_replace = response
            .requires_replace
            .iter()
            .filter_map(|p| match p.steps.first()?.selector.as_ref()? {
                tf::attribute_path::step::Selector::AttributeName(n) => Some(n.clone()),
                _ => None,
            })
            .collect();
        Ok(Plan {
            planned,
            private: response.planned_private,
            requires_replace,
        })
    }

    /// The second-plan rule: the final plan against the first (the
    /// engine's, from the preview, or this instance's own from `Diff`).
    pub(super) fn check_final_plan(
        &self,
        kind: ChangeKind,
        urn: &Urn,
        member: &Member,
        engine_first: Option<&PropertyMap>,
        last: &PropertyMap,
    ) -> Result<(), ProviderError> {
        let own = lock(&self.first_plans)
            .remove(urn)
            .filter(|(k, _)| *k == kind)
            .map(|(_, plan)| plan);
        let first = match engine_first {
            Some(outputs) => Some(state_to_tf(&member.schema.block, outputs).0),
            None => own,
        };
        match first {
            Some(first) => self
                .subject(urn, member)
                .check_final_plan(&first, last)
                .map_err(failed),
            None => Ok(()),
        }
    }

    /// `ApplyResourceChange` of a create or update, checked by seed 003's
    /// apply rule. An object the provider returns is always handed back
    /// to be recorded, as a partial failure when something went wrong.
    pub(super) async fn apply(
        &self,
        s: &Session,
        c: Change<'_>,
    ) -> Result<(String, PropertyMap), ProviderError> {
        let Change {
            urn,
            member,
            prior,
            plan,
            config,
            secrets,
        } = c;
        let ty = object_type(member);
        let response = s
            .client()
            .apply_resource_change(tf::apply_resource_change::Request {
                type_name: member.tf_type.clone(),
                prior_state: Some(encode(prior.map(|p| &p.state), &ty)?),
                planned_state: Some(encode(Some(&plan.planned), &ty)?),
                config: Some(encode(Some(config), &ty)?),
                planned_private: plan.private.clone(),
                provider_meta: null_meta(),
            })
            .await
            .map_err(|e| s.rpc_error("ApplyResourceChange", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(&member.schema.block));
        self.warn(&findings, Some(urn));
        let new_state = decode(response.new_state.as_ref(), &ty)?;
        let Some(new_state) = new_state else {
            return Err(failed(if findings.has_errors() {
                findings.error_lines().join("; ")
            } else {
                format!(
                    "provider {} returned no object after applying {urn}",
                    self.package
                )
            }));
        };
        let mut all_secrets = secrets.clone();
        if let Some(p) = prior {
            all_secrets.extend(p.secrets.iter().cloned());
        }
        let outputs = self.outputs(
            member,
            &crate::contract::recordable(&new_state),
            &all_secrets,
            &response.private,
        );
        let id = id_of(&new_state)
            .or_else(|| prior.and_then(|p| id_of(&p.state)))
            .unwrap_or_else(|| "(no id)".to_owned());
        let mut reasons = findings.error_lines();
        if let Err(v) = self
            .subject(urn, member)
            .check_apply(&plan.planned, &new_state)
        {
            reasons.push(v.to_string());
        }
        if reasons.is_empty() {
            Ok((id, outputs))
        } else {
            Err(ProviderError::PartialFailure {
                id,
                properties: outputs,
                reasons,
            })
        }
    }
}
