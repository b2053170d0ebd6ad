package main

// Protocol 6 on the wire: each RPC decoded, handed to the provider, and its
// answer encoded.

import (
	"context"

	"gostore/tfplugin6"
)

type server6 struct {
	tfplugin6.UnimplementedProviderServer
	p *provider
}

func schema6(b block) *tfplugin6.Schema {
	s := &tfplugin6.Schema{Version: b.version, Block: &tfplugin6.Schema_Block{Version: b.version}}
	for _, a := range b.attrs {
		s.Block.Attributes = append(s.Block.Attributes, &tfplugin6.Schema_Attribute{
			Name: a.name, Type: []byte(a.typ), Required: a.required, Optional: a.optional,
			Computed: a.computed, Sensitive: a.sensitive,
		})
	}
	return s
}

func diags6(ds []diag) []*tfplugin6.Diagnostic {
	var out []*tfplugin6.Diagnostic
	for _, d := range ds {
		x := &tfplugin6.Diagnostic{Severity: tfplugin6.Diagnostic_ERROR, Summary: d.summary, Detail: d.detail}
		if d.warning {
			x.Severity = tfplugin6.Diagnostic_WARNING
		}
		if d.attribute != "" {
			x.Attribute = &tfplugin6.AttributePath{Steps: []*tfplugin6.AttributePath_Step{
				{Selector: &tfplugin6.AttributePath_Step_AttributeName{AttributeName: d.attribute}},
			}}
		}
		out = append(out, x)
	}
	return out
}

func value6(o object, s block) *tfplugin6.DynamicValue {
	return &tfplugin6.DynamicValue{Msgpack: encode(o, s)}
}

func decode6(v *tfplugin6.DynamicValue) (object, []diag) {
	if v == nil {
		return nil, nil
	}
	o, err := decode(v.Msgpack)
	if err != nil {
		return nil, errorf("undecodable value: %v", err)
	}
	return o, nil
}

func (s *server6) GetProviderSchema(context.Context, *tfplugin6.GetProviderSchema_Request) (*tfplugin6.GetProviderSchema_Response, error) {
	return &tfplugin6.GetProviderSchema_Response{
		Provider:          schema6(s.p.providerSchema()),
		ResourceSchemas:   map[string]*tfplugin6.Schema{itemType: schema6(s.p.itemSchema())},
		DataSourceSchemas: map[string]*tfplugin6.Schema{itemType: schema6(s.p.dataSchema())},
	}, nil
}

func (s *server6) ValidateProviderConfig(context.Context, *tfplugin6.ValidateProviderConfig_Request) (*tfplugin6.ValidateProviderConfig_Response, error) {
	return &tfplugin6.ValidateProviderConfig_Response{}, nil
}

func (s *server6) ValidateResourceConfig(_ context.Context, r *tfplugin6.ValidateResourceConfig_Request) (*tfplugin6.ValidateResourceConfig_Response, error) {
	config, d := decode6(r.Config)
	if d == nil {
		d = s.p.validateItem(config)
	}
	return &tfplugin6.ValidateResourceConfig_Response{Diagnostics: diags6(d)}, nil
}

func (s *server6) ValidateDataResourceConfig(context.Context, *tfplugin6.ValidateDataResourceConfig_Request) (*tfplugin6.ValidateDataResourceConfig_Response, error) {
	return &tfplugin6.ValidateDataResourceConfig_Response{}, nil
}

func (s *server6) UpgradeResourceState(_ context.Context, r *tfplugin6.UpgradeResourceState_Request) (*tfplugin6.UpgradeResourceState_Response, error) {
	var raw []byte
	if r.RawState != nil {
		raw = r.RawState.Json
	}
	o, d := s.p.upgrade(r.Version, raw)
	if d != nil {
		return &tfplugin6.UpgradeResourceState_Response{Diagnostics: diags6(d)}, nil
	}
	return &tfplugin6.UpgradeResourceState_Response{UpgradedState: value6(o, s.p.itemSchema())}, nil
}

func (s *server6) ConfigureProvider(_ context.Context, r *tfplugin6.ConfigureProvider_Request) (*tfplugin6.ConfigureProvider_Response, error) {
	config, d := decode6(r.Config)
	if d == nil {
		d = s.p.configure(config)
	}
	return &tfplugin6.ConfigureProvider_Response{Diagnostics: diags6(d)}, nil
}

func (s *server6) ReadResource(_ context.Context, r *tfplugin6.ReadResource_Request) (*tfplugin6.ReadResource_Response, error) {
	current, d := decode6(r.CurrentState)
	if d != nil {
		return &tfplugin6.ReadResource_Response{Diagnostics: diags6(d)}, nil
	}
	o, d := s.p.read(current)
	return &tfplugin6.ReadResource_Response{NewState: value6(o, s.p.itemSchema()), Diagnostics: diags6(d), Private: r.Private}, nil
}

func (s *server6) PlanResourceChange(_ context.Context, r *tfplugin6.PlanResourceChange_Request) (*tfplugin6.PlanResourceChange_Response, error) {
	prior, d1 := decode6(r.PriorState)
	proposed, d2 := decode6(r.ProposedNewState)
	if d := append(d1, d2...); d != nil {
		return &tfplugin6.PlanResourceChange_Response{Diagnostics: diags6(d)}, nil
	}
	planned, replace, d := s.p.plan(prior, proposed)
	resp := &tfplugin6.PlanResourceChange_Response{PlannedState: value6(planned, s.p.itemSchema()), Diagnostics: diags6(d), PlannedPrivate: r.PriorPrivate}
	for _, name := range replace {
		resp.RequiresReplace = append(resp.RequiresReplace, &tfplugin6.AttributePath{Steps: []*tfplugin6.AttributePath_Step{
			{Selector: &tfplugin6.AttributePath_Step_AttributeName{AttributeName: name}},
		}})
	}
	return resp, nil
}

func (s *server6) ApplyResourceChange(_ context.Context, r *tfplugin6.ApplyResourceChange_Request) (*tfplugin6.ApplyResourceChange_Response, error) {
	prior, d1 := decode6(r.PriorState)
	planned, d2 := decode6(r.PlannedState)
	if d := append(d1, d2...); d != nil {
		return &tfplugin6.ApplyResourceChange_Response{Diagnostics: diags6(d)}, nil
	}
	o, d := s.p.apply(prior, planned)
	return &tfplugin6.ApplyResourceChange_Response{NewState: value6(o, s.p.itemSchema()), Diagnostics: diags6(d)}, nil
}

func (s *server6) ImportResourceState(_ context.Context, r *tfplugin6.ImportResourceState_Request) (*tfplugin6.ImportResourceState_Response, error) {
	o, d := s.p.importState(r.Id)
	if d != nil {
		return &tfplugin6.ImportResourceState_Response{Diagnostics: diags6(d)}, nil
	}
	return &tfplugin6.ImportResourceState_Response{ImportedResources: []*tfplugin6.ImportResourceState_ImportedResource{
		{TypeName: r.TypeName, State: value6(o, s.p.itemSchema())},
	}}, nil
}

func (s *server6) ReadDataSource(_ context.Context, r *tfplugin6.ReadDataSource_Request) (*tfplugin6.ReadDataSource_Response, error) {
	config, d := decode6(r.Config)
	if d != nil {
		return &tfplugin6.ReadDataSource_Response{Diagnostics: diags6(d)}, nil
	}
	o, d := s.p.readData(config)
	if d != nil {
		return &tfplugin6.ReadDataSource_Response{Diagnostics: diags6(d)}, nil
	}
	return &tfplugin6.ReadDataSource_Response{State: value6(o, s.p.dataSchema())}, nil
}

func (s *server6) StopProvider(context.Context, *tfplugin6.StopProvider_Request) (*tfplugin6.StopProvider_Response, error) {
	event("stop")
	return &tfplugin6.StopProvider_Response{}, nil
}
