//! The `Provider` trait: each Pulumi call as the Terraform calls it
//! takes (the table in the parent module's docs).

use converge_plugin::schema::{FunctionSpec, ResourceSpec, Shapes, TypeSpec};

use super::*;

fn differs(a: Option<&PropertyValue>, b: Option<&PropertyValue>) -> bool {
    let null = PropertyValue::Null;
    let (a, b) = (bare(a.unwrap_or(&null)), bare(b.unwrap_or(&null)));
    matches!(b, PropertyValue::Unknown) && !matches!(a, PropertyValue::Unknown) || a != b
}

#[async_trait]
impl Provider for TerraformProvider {
    fn package(&self) -> &str {
        &self.package
    }

    async fn plugin_info(&self) -> Result<PluginInfo, ProviderError> {
        Ok(PluginInfo {
            version: self.shared.version.clone(),
        })
    }

    /// The tokens, each resource's outputs and each data source's result
    /// (Pulumi names). Inputs are left out: Check accepts Terraform's
    /// names too, and refuses unknown ones itself.
    async fn schema(&self) -> Result<Arc<PackageSchema>, ProviderError> {
        let s = self.spare().await?;
        let resources = s.resources.iter().map(|(token, m)| {
            let spec = ResourceSpec {
                inputs: None,
                outputs: Some(m.schema.block.pulumi_properties()),
                component: false,
            };
            (token.clone(), spec)
        });
        let functions = s.functions.iter().map(|(token, m)| {
            let spec = FunctionSpec {
                inputs: None,
                result: TypeSpec::Object(m.schema.block.pulumi_properties()),
            };
            (token.clone(), spec)
        });
        Ok(Arc::new(PackageSchema {
            name: self.package.clone(),
            version: self.shared.version.as_ref().map(ToString::to_string),
            resources: s.resources.keys().cloned().collect(),
            functions: s.functions.keys().cloned().collect(),
            shapes: Shapes {
                resources: resources.collect(),
                functions: functions.collect(),
                types: Default::default(),
            },
        }))
    }

    async fn check_config(&self, req: CheckRequest) -> Result<CheckResponse, ProviderError> {
        let s = self.spare().await?;
        let block = &s.schema.provider;
        // Sensitive settings given in plain text are secrets all the same.
        let inputs = mark_sensitive(block, &req.news);
        let (config, _) = match checked_config(
            block,
            &provider_props(&req.news),
            ConfigKind::ProviderConfig,
        ) {
            Ok(c) => c,
            Err(failures) => return Ok(CheckResponse { inputs, failures }),
        };
        let response = s
            .client()
            .validate_provider_config(tf::validate_provider_config::Request {
                config: Some(encode(Some(&config), &block.implied_type())?),
            })
            .await
            .map_err(|e| s.rpc_error("ValidateProviderConfig", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(block));
        self.warn(&findings, Some(&req.urn));
        Ok(CheckResponse {
            inputs,
            failures: findings.check_failures(),
        })
    }

    async fn configure(&self, req: ConfigureRequest) -> Result<(), ProviderError> {
        let spare = self.spare().await?;
        let block = &spare.schema.provider;
        let (config, _) = checked_config(
            block,
            &provider_props(&req.inputs),
            ConfigKind::ProviderConfig,
        )
        .map_err(failures_error)?;
        let encoded = encode(Some(&config), &block.implied_type())?;
        let s = self.configured_for(encoded, req.urn.as_ref()).await?;
        let _ = self.configured.set(s);
        Ok(())
    }

    /// `StopProvider`, as Terraform sends it on an interrupt: the provider
    /// stops its running operations (advisory).
    async fn cancel(&self) -> Result<(), ProviderError> {
        let Some(s) = self.configured.get() else {
            return Ok(());
        };
        let response = s
            .client()
            .stop_provider(tf::stop_provider::Request {})
            .await
            .map_err(|e| s.rpc_error("StopProvider", &e))?
            .into_inner();
        if !response.error.is_empty() {
            return Err(failed(format!(
                "Terraform provider {} could not stop: {}",
                self.package, response.error
            )));
        }
        Ok(())
    }

    async fn check(&self, req: CheckRequest) -> Result<CheckResponse, ProviderError> {
        let s = self.session().await?;
        let member = self.resource(&s, &req.urn)?;
        let block = &member.schema.block;
        // Sensitive arguments given in plain text are secrets all the same.
        let inputs = mark_sensitive(block, &req.news);
        let (config, _) = match checked_config(block, &req.news, ConfigKind::Arguments) {
            Ok(c) => c,
            Err(failures) => return Ok(CheckResponse { inputs, failures }),
        };
        let response = s
            .client()
            .validate_resource_config(tf::validate_resource_config::Request {
                type_name: member.tf_type.clone(),
                config: Some(encode(Some(&config), &object_type(member))?),
            })
            .await
            .map_err(|e| s.rpc_error("ValidateResourceConfig", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(block));
        self.warn(&findings, Some(&req.urn));
        Ok(CheckResponse {
            inputs,
            failures: findings.check_failures(),
        })
    }

    async fn diff(&self, req: DiffRequest) -> Result<DiffResponse, ProviderError> {
        let s = self.session().await?;
        let member = self.resource(&s, &req.urn)?;
        let prior = self.prior(&s, &req.urn, member, &req.old_outputs).await?;
        let (config, _) = self.config(member, &req.new_inputs)?;
        let plan = self
            .plan(&s, &req.urn, member, Some(&prior), &config)
            .await?;
        let mut detailed = BTreeMap::new();
        let mut changed = Vec::new();
        let mut replace = Vec::new();
        let names: std::collections::BTreeSet<&String> =
            prior.state.keys().chain(plan.planned.keys()).collect();
        for name in names {
            if !differs(prior.state.get(name), plan.planned.get(name)) {
                continue;
            }
            let pulumi = crate::names::pulumi_name(name);
            let replaces = plan.requires_replace.contains(name);
            let configurable = member
                .schema
                .block
                .attributes
                .get(name)
                .is_none_or(|a| !a.computed_only());
            if !configurable && !replaces {
                // A computed value that follows from the change: shown
                // as the output it is, not as a change asked for.
                continue;
            }
            if replaces {
                replace.push(pulumi.clone());
            }
            let kind = match (replaces, prior.state.get(name).map(bare)) {
                (false, None | Some(PropertyValue::Null)) => converge_model::DiffKind::Add,
                (true, None | Some(PropertyValue::Null)) => converge_model::DiffKind::AddReplace,
                (false, _)
                    if matches!(plan.planned.get(name).map(bare), Some(PropertyValue::Null)) =>
                {
                    converge_model::DiffKind::Delete
                }
                (false, _) => converge_model::DiffKind::Update,
                (true, _) => converge_model::DiffKind::UpdateReplace,
            };
            detailed.insert(
                pulumi.clone(),
                PropertyDiff {
                    kind,
                    // The prior is the state (outputs), not the last inputs:
                    // drift found by a refresh shows as found → desired.
                    input_diff: false,
                },
            );
            changed.push(pulumi);
        }
        // Nothing to apply: the state to record is the prior state as the
        // provider upgraded it (seed 004's Upgraded State, in its current
        // schema version), not the form an older release wrote.
        let upgraded_outputs = changed
            .is_empty()
            .then(|| self.outputs(member, &prior.state, &prior.secrets, &prior.private));
        // A replacement's create plans from no prior state, so the
        // replacement is planned as Terraform Core plans it, as a create,
        // and that plan is the first plan its final plan answers to.
        let first = if replace.is_empty() {
            (ChangeKind::Update, plan.planned)
        } else {
            let create = self.plan(&s, &req.urn, member, None, &config).await?;
            (ChangeKind::Create, create.planned)
        };
        lock(&self.first_plans).insert(req.urn.clone(), first);
        Ok(DiffResponse {
            changes: if changed.is_empty() {
                DiffChanges::None
            } else {
                DiffChanges::Some
            },
            replace_keys: replace,
            stable_keys: Vec::new(),
            changed_keys: changed,
            detailed_diff: Some(detailed),
            delete_before_replace: false,
            upgraded_outputs,
        })
    }

    async fn create(&self, req: CreateRequest) -> Result<CreateResponse, ProviderError> {
        let s = self.session().await?;
        let member = self.resource(&s, &req.urn)?;
        if !member.schema.block.attributes.contains_key("id") {
            return Err(failed(format!(
                "Terraform resource type {} has no id attribute, which Converge needs to track its objects",
                member.tf_type
            )));
        }
        let (config, secrets) = self.config(member, &req.properties)?;
        let plan = self.plan(&s, &req.urn, member, None, &config).await?;
        if req.preview {
            let outputs = self.planned_outputs(member, &plan.planned, &secrets);
            lock(&self.first_plans)
                .insert(req.urn.clone(), (ChangeKind::Create, plan.planned.clone()));
            return Ok(CreateResponse {
                id: id_of(&plan.planned).unwrap_or_default(),
                properties: outputs,
            });
        }
        self.check_final_plan(
            ChangeKind::Create,
            &req.urn,
            member,
            req.planned.as_ref(),
            &plan.planned,
        )?;
        let applied = self.apply(
            &s,
            Change {
                urn: &req.urn,
                member,
                prior: None,
                plan: &plan,
                config: &config,
                secrets: &secrets,
            },
        );
        match self.keeping(&s, req.timeout, applied).await {
            Timed::InTime(r) => {
                let (id, properties) = r?;
                Ok(CreateResponse { id, properties })
            }
            Timed::Late(r) => {
                let (id, properties) = r?;
                Err(ProviderError::PartialFailure {
                    id,
                    properties,
                    reasons: vec![self.late(&req.urn, "create", req.timeout)],
                })
            }
        }
    }

    async fn update(&self, req: UpdateRequest) -> Result<UpdateResponse, ProviderError> {
        let s = self.session().await?;
        let member = self.resource(&s, &req.urn)?;
        let prior = self.prior(&s, &req.urn, member, &req.old_outputs).await?;
        let (config, secrets) = self.config(member, &req.new_inputs)?;
        let plan = self
            .plan(&s, &req.urn, member, Some(&prior), &config)
            .await?;
        if req.preview {
            let mut all = secrets.clone();
            all.extend(prior.secrets.iter().cloned());
            return Ok(UpdateResponse {
                properties: self.planned_outputs(member, &plan.planned, &all),
            });
        }
        self.check_final_plan(
            ChangeKind::Update,
            &req.urn,
            member,
            req.planned.as_ref(),
            &plan.planned,
        )?;
        let applied = self.apply(
            &s,
            Change {
                urn: &req.urn,
                member,
                prior: Some(&prior),
                plan: &plan,
                config: &config,
                secrets: &secrets,
            },
        );
        match self.keeping(&s, req.timeout, applied).await {
            Timed::InTime(r) => Ok(UpdateResponse { properties: r?.1 }),
            Timed::Late(r) => Err(ProviderError::PartialFailure {
                id: req.id.clone(),
                properties: r?.1,
                reasons: vec![self.late(&req.urn, "update", req.timeout)],
            }),
        }
    }

    async fn delete(&self, req: DeleteRequest) -> Result<(), ProviderError> {
        let s = self.session().await?;
        let member = self.resource(&s, &req.urn)?;
        let prior = self.prior(&s, &req.urn, member, &req.outputs).await?;
        let ty = object_type(member);
        let request = tf::apply_resource_change::Request {
            type_name: member.tf_type.clone(),
            prior_state: Some(encode(Some(&prior.state), &ty)?),
            planned_state: Some(encode(None, &ty)?),
            config: Some(encode(None, &ty)?),
            planned_private: prior.private.clone(),
            provider_meta: null_meta(),
        };
        let call = async {
            s.client()
                .apply_resource_change(request)
                .await
                .map_err(|e| s.rpc_error("ApplyResourceChange", &e))
        };
        let response = self
            .abandoning(&s, req.timeout, &req.urn, "delete", call)
            .await?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(&member.schema.block));
        self.warn(&findings, Some(&req.urn));
        if findings.has_errors() {
            return Err(failed(findings.error_lines().join("; ")));
        }
        if decode(response.new_state.as_ref(), &ty)?.is_some() {
            return Err(failed(format!(
                "provider {} {}: it returned an object after deleting {}, so the object may still exist",
                self.package, "produced an inconsistent result after apply", req.urn
            )));
        }
        Ok(())
    }

    async fn read(&self, req: ReadRequest) -> Result<ReadResponse, ProviderError> {
        let s = self.session().await?;
        let member = self.resource(&s, &req.urn)?;
        let Some(recorded) = &req.state else {
            return self.import(&s, &req, member).await;
        };
        let prior = self.prior(&s, &req.urn, member, recorded).await?;
        let call = self.read_resource(&s, &req.urn, member, &prior.state, prior.private.clone());
        let Some((state, private)) = self
            .abandoning(&s, req.timeout, &req.urn, "read", call)
            .await?
        else {
            return Ok(ReadResponse::default());
        };
        let properties = self.outputs(member, &state, &prior.secrets, &private);
        Ok(ReadResponse {
            id: id_of(&state).unwrap_or_else(|| req.id.clone()),
            inputs: req
                .inputs
                .clone()
                .unwrap_or_else(|| self.inputs_of(member, &state)),
            properties,
        })
    }

    async fn invoke(&self, req: InvokeRequest) -> Result<InvokeResponse, ProviderError> {
        let s = self.session().await?;
        let member = s.functions.get(&req.token).ok_or_else(|| {
            failed(format!(
                "Terraform provider {} has no data source {}",
                self.package, req.token
            ))
        })?;
        let block = &member.schema.block;
        let ty = object_type(member);
        let (config, secrets) = match checked_config(block, &req.args, ConfigKind::Arguments) {
            Ok(c) => c,
            Err(failures) => {
                return Ok(InvokeResponse {
                    outputs: PropertyMap::new(),
                    failures,
                })
            }
        };
        let validated = s
            .client()
            .validate_data_resource_config(tf::validate_data_resource_config::Request {
                type_name: member.tf_type.clone(),
                config: Some(encode(Some(&config), &ty)?),
            })
            .await
            .map_err(|e| s.rpc_error("ValidateDataResourceConfig", &e))?
            .into_inner();
        let findings = Findings::read(&validated.diagnostics, Some(block));
        self.warn(&findings, None);
        if findings.has_errors() {
            return Ok(InvokeResponse {
                outputs: PropertyMap::new(),
                failures: findings.check_failures(),
            });
        }
        let response = s
            .client()
            .read_data_source(tf::read_data_source::Request {
                type_name: member.tf_type.clone(),
                config: Some(encode(Some(&config), &ty)?),
                provider_meta: null_meta(),
            })
            .await
            .map_err(|e| s.rpc_error("ReadDataSource", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(block));
        self.warn(&findings, None);
        if findings.has_errors() {
            return Err(failed(format!(
                "{}: {}",
                req.token,
                findings.error_lines().join("; ")
            )));
        }
        let state = decode(response.state.as_ref(), &ty)?.unwrap_or_default();
        Ok(InvokeResponse {
            outputs: tf_to_pulumi(block, &state, &secrets),
            failures: Vec::new(),
        })
    }
}
