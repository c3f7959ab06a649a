%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0

%% @doc The dqsd_otel application: checks the configuration and starts the
%% supervision tree.
-module(dqsd_otel_app).

-behaviour(application).

-include("dqsd_otel_internal.hrl").

-export([start/2, prep_stop/1, stop/1]).

%% @private
-spec start(application:start_type(), term()) -> {ok, pid()} | {error, term()}.
start(_Type, _Args) ->
    case dqsd_otel_config:load() of
        {ok, Config} -> dqsd_otel_sup:start_link(Config);
        {error, Bad} -> {error, Bad}
    end.

%% @private Callers stop queuing before the exporter's last flush.
-spec prep_stop(State) -> State.
prep_stop(State) ->
    _ = persistent_term:erase(?PT_QUEUE),
    State.

%% @private
-spec stop(term()) -> ok.
stop(_State) ->
    ok.
