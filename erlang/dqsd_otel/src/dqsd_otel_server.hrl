%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0

%% What the library's two gen_servers, the exporter and its watchdog, do
%% with the requests they do not serve: the library casts to neither and
%% calls only the exporter (`flush'), so a cast is ignored and any other
%% call is answered `{error, unknown_call}' (unknown_call/1) rather than
%% crashing the server. Included by both; each defines handle_call/3 for
%% the calls it serves.

%% @private
-spec handle_cast(term(), State) -> {noreply, State}.
handle_cast(_Msg, State) ->
    {noreply, State}.

-spec unknown_call(State) -> {reply, {error, unknown_call}, State}.
unknown_call(State) ->
    {reply, {error, unknown_call}, State}.
