package main

// Protocol 5 on the wire: each RPC decoded, handed to the provider, and its
// answer encoded.

import (
	"context"

	"gostore/tfplugin5"
)

type server5 struct {
	tfplugin5.UnimplementedProviderServer
	p *provider
}

func schema5(b block) *tfplugin5.Schema {
	s := &tfplugin5.Schema{Version: b.version, Block: &tfplugin5.Schema_Block{Version: b.version}}
	for _, a := range b.attrs {
		s.Block.Attributes = append(s.Block.Attributes, &tfplugin5.Schema_Attribute{
			Name: a.name, Type: []byte(a.typ), Required: a.required, Optional: a.optional,
			Computed: a.computed, Sensitive: a.sensitive,
		})
	}
	return s
}

func diags5(ds []diag) []*tfplugin5.Diagnostic {
	var out []*tfplugin5.Diagnostic
	for _, d := range ds {
		x := &tfplugin5.Diagnostic{Severity: tfplugin5.Diagnostic_ERROR, Summary: d.summary, Detail: d.detail}
		if d.warning {
			x.Severity = tfplugin5.Diagnostic_WARNING
		}
		if d.attribute != "" {
			x.Attribute = &tfplugin5.AttributePath{Steps: []*tfplugin5.AttributePath_Step{
				{Selector: &tfplugin5.AttributePath_Step_AttributeName{AttributeName: d.attribute}},
			}}
		}
		out = append(out, x)
	}
	return out
}

func value5(o object, s block) *tfplugin5.DynamicValue {
	return &tfplugin5.DynamicValue{Msgpack: encode(o, s)}
}

func decode5(v *tfplugin5.DynamicValue) (object, []diag) {
	if v == nil {
		return nil, nil
	}
	o, err := decode(v.Msgpack)
	if err != nil {
		return nil, errorf("undecodable value: %v", err)
	}
	return o, nil
}

func (s *server5) GetSchema(context.Context, *tfplugin5.GetProviderSchema_Request) (*tfplugin5.GetProviderSchema_Response, error) {
	return &tfplugin5.GetProviderSchema_Response{
		Provider:          schema5(s.p.providerSchema()),
		ResourceSchemas:   map[string]*tfplugin5.Schema{itemType: schema5(s.p.itemSchema())},
		DataSourceSchemas: map[string]*tfplugin5.Schema{itemType: schema5(s.p.dataSchema())},
	}, nil
}

func (s *server5) PrepareProviderConfig(context.Context, *tfplugin5.PrepareProviderConfig_Request) (*tfplugin5.PrepareProviderConfig_Response, error) {
	return &tfplugin5.PrepareProviderConfig_Response{}, nil
}

func (s *server5) ValidateResourceTypeConfig(_ context.Context, r *tfplugin5.ValidateResourceTypeConfig_Request) (*tfplugin5.ValidateResourceTypeConfig_Response, error) {
	config, d := decode5(r.Config)
	if d == nil {
		d = s.p.validateItem(config)
	}
	return &tfplugin5.ValidateResourceTypeConfig_Response{Diagnostics: diags5(d)}, nil
}

func (s *server5) ValidateDataSourceConfig(context.Context, *tfplugin5.ValidateDataSourceConfig_Request) (*tfplugin5.ValidateDataSourceConfig_Response, error) {
	return &tfplugin5.ValidateDataSourceConfig_Response{}, nil
}

func (s *server5) UpgradeResourceState(_ context.Context, r *tfplugin5.UpgradeResourceState_Request) (*tfplugin5.UpgradeResourceState_Response, error) {
	var raw []byte
	if r.RawState != nil {
		raw = r.RawState.Json
	}
	o, d := s.p.upgrade(r.Version, raw)
	if d != nil {
		return &tfplugin5.UpgradeResourceState_Response{Diagnostics: diags5(d)}, nil
	}
	return &tfplugin5.UpgradeResourceState_Response{UpgradedState: value5(o, s.p.itemSchema())}, nil
}

func (s *server5) Configure(_ context.Context, r *tfplugin5.Configure_Request) (*tfplugin5.Configure_Response, error) {
	config, d := decode5(r.Config)
	if d == nil {
		d = s.p.configure(config)
	}
	return &tfplugin5.Configure_Response{Diagnostics: diags5(d)}, nil
}

func (s *server5) ReadResource(_ context.Context, r *tfplugin5.ReadResource_Request) (*tfplugin5.ReadResource_Response, error) {
	current, d := decode5(r.CurrentState)
	if d != nil {
		return &tfplugin5.ReadResource_Response{Diagnostics: diags5(d)}, nil
	}
	o, d := s.p.read(current)
	return &tfplugin5.ReadResource_Response{NewState: value5(o, s.p.itemSchema()), Diagnostics: diags5(d), Private: r.Private}, nil
}

func (s *server5) PlanResourceChange(_ context.Context, r *tfplugin5.PlanResourceChange_Request) (*tfplugin5.PlanResourceChange_Response, error) {
	prior, d1 := decode5(r.PriorState)
	proposed, d2 := decode5(r.ProposedNewState)
	if d := append(d1, d2...); d != nil {
		return &tfplugin5.PlanResourceChange_Response{Diagnostics: diags5(d)}, nil
	}
	planned, replace, d := s.p.plan(prior, proposed)
	resp := &tfplugin5.PlanResourceChange_Response{PlannedState: value5(planned, s.p.itemSchema()), Diagnostics: diags5(d), PlannedPrivate: r.PriorPrivate}
	for _, name := range replace {
		resp.RequiresReplace = append(resp.RequiresReplace, &tfplugin5.AttributePath{Steps: []*tfplugin5.AttributePath_Step{
			{Selector: &tfplugin5.AttributePath_Step_AttributeName{AttributeName: name}},
		}})
	}
	return resp, nil
}

func (s *server5) ApplyResourceChange(_ context.Context, r *tfplugin5.ApplyResourceChange_Request) (*tfplugin5.ApplyResourceChange_Response, error) {
	prior, d1 := decode5(r.PriorState)
	planned, d2 := decode5(r.PlannedState)
	if d := append(d1, d2...); d != nil {
		return &tfplugin5.ApplyResourceChange_Response{Diagnostics: diags5(d)}, nil
	}
	o, d := s.p.apply(prior, planned)
	return &tfplugin5.ApplyResourceChange_Response{NewState: value5(o, s.p.itemSchema()), Diagnostics: diags5(d)}, nil
}

func (s *server5) ImportResourceState(_ context.Context, r *tfplugin5.ImportResourceState_Request) (*tfplugin5.ImportResourceState_Response, error) {
	o, d := s.p.importState(r.Id)
	if d != nil {
		return &tfplugin5.ImportResourceState_Response{Diagnostics: diags5(d)}, nil
	}
	return &tfplugin5.ImportResourceState_Response{ImportedResources: []*tfplugin5.ImportResourceState_ImportedResource{
		{TypeName: r.TypeName, State: value5(o, s.p.itemSchema())},
	}}, nil
}

func (s *server5) ReadDataSource(_ context.Context, r *tfplugin5.ReadDataSource_Request) (*tfplugin5.ReadDataSource_Response, error) {
	config, d := decode5(r.Config)
	if d != nil {
		return &tfplugin5.ReadDataSource_Response{Diagnostics: diags5(d)}, nil
	}
	o, d := s.p.readData(config)
	if d != nil {
		return &tfplugin5.ReadDataSource_Response{Diagnostics: diags5(d)}, nil
	}
	return &tfplugin5.ReadDataSource_Response{State: value5(o, s.p.dataSchema())}, nil
}

func (s *server5) Stop(context.Context, *tfplugin5.Stop_Request) (*tfplugin5.Stop_Response, error) {
	event("stop")
	return &tfplugin5.Stop_Response{}, nil
}
