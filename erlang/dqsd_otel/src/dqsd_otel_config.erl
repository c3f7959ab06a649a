%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0

%% @doc Configuration of dqsd_otel, read from the application environment
%% when the application starts.
%%
%% | key                    | default                    | meaning |
%% |------------------------|----------------------------|---------|
%% | `enabled'              | `true'                     | record spans (switch at run time with `dqsd_otel:enable/0', `disable/0') |
%% | `endpoint'             | `"http://localhost:4318"'  | OTLP/HTTP base URL, without query or fragment; requests go to `/v1/traces' and `/v1/logs' under its path |
%% | `service_name'         | `<<"unknown_service:erlang">>' | resource attribute `service.name'; unset, and without OTEL_SERVICE_NAME, the resource attributes' `service.name' if any |
%% | `resource_attributes'  | `#{}'                      | further resource attributes (map or list of pairs) |
%% | `headers'              | `[]'                       | extra HTTP headers, `[{Name, Value}]': names HTTP tokens, values without control characters, sent as UTF-8 |
%% | `compression'          | `none'                     | `none' or `gzip' |
%% | `ssl_options'          | `[]'                       | `ssl' client options for an `https' endpoint (e.g. `verify', `cacertfile') |
%% | `start_events'         | `batch'                    | `batch': the start events of one request in one `deltaq.span.starts' log record per probe; `per_span': one `deltaq.span.start' record per span (see the README) |
%% | `batch_size'           | `512'                      | most spans (and most start events) per request |
%% | `batch_interval_ms'    | `500'                      | longest time an item waits in the queue when the collector is up |
%% | `queue_limit'          | `8192'                     | most items (spans + start events) queued; more are dropped and counted |
%% | `queue_max_bytes'      | `33554432' (32 MiB)        | most bytes queued (each item's `erlang:external_size/1', its binaries' bytes included); an item that would go beyond is dropped and counted |
%% | `max_request_bytes'    | `4194304' (4 MiB)          | largest request body (JSON, before compression): a batch that encodes larger is sent in parts, and one span or start event larger alone is dropped and counted (`oversized_spans', `oversized_events') |
%% | `export_timeout_ms'    | `10000'                    | timeout of one HTTP request |
%% | `max_retry_time_ms'    | `30000'                    | how long a failed request is retried: no retry begins later than this after its first failed attempt; then its items are counted as failed (`infinity': no limit) |
%% | `max_retries'          | `infinity'                 | most retries of a failed request (a non-negative integer or `infinity'); its items are counted as failed when either this or `max_retry_time_ms' is reached |
%% | `retry_backoff_ms'     | `100'                      | first retry delay; doubles per retry, with jitter; also the first delay before restarting a stopped exporter |
%% | `retry_backoff_max_ms' | `5000'                     | longest backoff between retries (a longer Retry-After is waited out), and longest delay before restarting the exporter |
%%
%% The retry budget is a time rather than a count because what the retries
%% wait out is an outage, and an outage lasts a time: with the default
%% backoff, 5 retries spanned only 1.5 to 3.1 s, less than a collector may
%% take to restart (a rollout, a reload of its configuration), and the
%% items of the requests that were waiting were lost. 30 s outlasts such
%% restarts with room to spare. It is shorter than the collector's own
%% exporters' 5 minutes because a request being retried holds up all
%% others: once an outage has filled the queue (callers then drop), a
%% longer wait would keep one old request at the cost of newer items. The
%% queue's limits bound memory whatever the budget.
%%
%% When `endpoint', `service_name' or `resource_attributes' is not set, the
%% standard OpenTelemetry variables `OTEL_EXPORTER_OTLP_ENDPOINT',
%% `OTEL_SERVICE_NAME' and `OTEL_RESOURCE_ATTRIBUTES' (`k1=v1,k2=v2') are
%% used. Nothing read here becomes an atom.
-module(dqsd_otel_config).

-export([load/0, load/1]).

-export_type([config/0]).

-type config() :: #{
    enabled := boolean(),
    traces_url := string(),
    logs_url := string(),
    service_name := binary(),
    resource_attributes := [{binary(), term()}] | #{term() => term()},
    headers := [{string(), string()}],
    compression := none | gzip,
    ssl_options := list(),
    start_events := batch | per_span,
    batch_size := pos_integer(),
    batch_interval_ms := pos_integer(),
    queue_limit := pos_integer(),
    queue_max_bytes := pos_integer(),
    max_request_bytes := pos_integer(),
    export_timeout_ms := pos_integer(),
    max_retries := non_neg_integer() | infinity,
    max_retry_time_ms := non_neg_integer() | infinity,
    retry_backoff_ms := pos_integer(),
    retry_backoff_max_ms := pos_integer()
}.

%% The keys of the application environment.
-define(KEYS, [enabled, endpoint, service_name, resource_attributes, headers,
               compression, ssl_options, start_events, batch_size, batch_interval_ms,
               queue_limit, queue_max_bytes, max_request_bytes, export_timeout_ms,
               max_retry_time_ms, max_retries, retry_backoff_ms, retry_backoff_max_ms]).

%% @doc Reads and checks the `dqsd_otel' application environment. A key
%% it does not know is refused like a bad value: a misspelt key (say
%% `batch_interval' for `batch_interval_ms') would otherwise leave its
%% setting at the default without a word.
-spec load() -> {ok, config()} | {error, {bad_config, atom(), term(), string()}}.
load() ->
    case [{K, V} || {K, V} <- application:get_all_env(dqsd_otel),
                    not lists:member(K, ?KEYS)] of
        [] ->
            load(fun(Key) -> application:get_env(dqsd_otel, Key) end);
        [{Key, Value} | _] ->
            {error, {bad_config, Key, Value,
                     lists:flatten(io_lib:format("unknown key; the keys are ~0p",
                                                 [?KEYS]))}}
    end.

%% @doc Like `load/0' with `Get(Key)' in place of the application
%% environment (`{ok, Value}' or `undefined').
-spec load(fun((atom()) -> {ok, term()} | undefined)) ->
    {ok, config()} | {error, {bad_config, atom(), term(), string()}}.
load(Get) ->
    try
        {ok, build(Get)}
    catch
        throw:{bad_config, _Key, _Value, _Why} = Bad -> {error, Bad}
    end.

build(Get) ->
    Endpoint = value(Get, endpoint, os_env("OTEL_EXPORTER_OTLP_ENDPOINT",
                                           "http://localhost:4318")),
    Base = base_url(Endpoint),
    ResourceAttributes = resource_attributes(value(Get, resource_attributes,
                                                   os_resource_attributes())),
    #{enabled => check(enabled, value(Get, enabled, true), fun is_boolean/1,
                       "must be true or false"),
      traces_url => Base ++ "/v1/traces",
      logs_url => Base ++ "/v1/logs",
      service_name => service_name(value(Get, service_name,
                                         os_env("OTEL_SERVICE_NAME",
                                                resource_service_name(ResourceAttributes)))),
      resource_attributes => ResourceAttributes,
      headers => headers(value(Get, headers, [])),
      compression => check(compression, value(Get, compression, none),
                           fun(C) -> C =:= none orelse C =:= gzip end,
                           "must be none or gzip"),
      %% ssl's client options are {Key, Value} pairs: another element
      %% (`[verify_peer]') crashed httpc's connection process, and the
      %% exporter waited for its answer for ever.
      ssl_options => check(ssl_options, value(Get, ssl_options, []),
                           fun(L) -> is_list(L) andalso lists:all(fun ssl_option/1, L) end,
                           "must be a list of ssl client options, {Key, Value}"),
      start_events => check(start_events, value(Get, start_events, batch),
                            fun(F) -> F =:= batch orelse F =:= per_span end,
                            "must be batch or per_span"),
      batch_size => positive(batch_size, value(Get, batch_size, 512)),
      batch_interval_ms => positive(batch_interval_ms,
                                    value(Get, batch_interval_ms, 500)),
      queue_limit => positive(queue_limit, value(Get, queue_limit, 8192)),
      queue_max_bytes => positive(queue_max_bytes, value(Get, queue_max_bytes, 32 bsl 20)),
      max_request_bytes => positive(max_request_bytes,
                                    value(Get, max_request_bytes, 4 bsl 20)),
      export_timeout_ms => positive(export_timeout_ms,
                                    value(Get, export_timeout_ms, 10000)),
      %% No count by default: the time budget alone decides.
      max_retries => non_negative_or_infinity(max_retries,
                                              value(Get, max_retries, infinity)),
      max_retry_time_ms => non_negative_or_infinity(max_retry_time_ms,
                                                    value(Get, max_retry_time_ms, 30000)),
      retry_backoff_ms => positive(retry_backoff_ms,
                                   value(Get, retry_backoff_ms, 100)),
      retry_backoff_max_ms => positive(retry_backoff_max_ms,
                                       value(Get, retry_backoff_max_ms, 5000))}.

value(Get, Key, Default) ->
    case Get(Key) of
        {ok, V} -> V;
        undefined -> Default
    end.

os_env(Name, Default) ->
    case os:getenv(Name) of
        false -> Default;
        "" -> Default;
        V -> V
    end.

check(Key, Value, Pred, Why) ->
    case Pred(Value) of
        true -> Value;
        false -> throw({bad_config, Key, Value, Why})
    end.

positive(Key, Value) ->
    check(Key, Value, fun(N) -> is_integer(N) andalso N > 0 end,
          "must be a positive integer").

non_negative_or_infinity(Key, Value) ->
    check(Key, Value, fun(N) -> N =:= infinity orelse (is_integer(N) andalso N >= 0) end,
          "must be a non-negative integer or infinity").

%% The endpoint as a string without a trailing slash, after checking that it
%% is an http(s) URL with a host, and with neither query nor fragment: the
%% signal's path is appended to the endpoint, so that a query would have
%% taken it in (`http://h:4318/?k=v' posted to `/' with the query
%% `k=v/v1/traces', which a collector answers 404 every time).
base_url(Endpoint) ->
    Str = try unicode:characters_to_list(Endpoint) of
              S when is_list(S) -> S;
              _ -> throw({bad_config, endpoint, Endpoint, "must be a URL string"})
          catch
              error:badarg ->
                  throw({bad_config, endpoint, Endpoint, "must be a URL string"})
          end,
    case uri_string:parse(Str) of
        #{query := _} ->
            throw({bad_config, endpoint, Endpoint, "must have no query (?...)"});
        #{fragment := _} ->
            throw({bad_config, endpoint, Endpoint, "must have no fragment (#...)"});
        %% httpc took port 99999, and every request hung until its timeout.
        #{port := Port} when is_integer(Port), (Port < 1 orelse Port > 65535) ->
            throw({bad_config, endpoint, Endpoint, "must have a port from 1 to 65535"});
        #{scheme := Scheme, host := Host} when Host =/= "",
                                                (Scheme =:= "http" orelse
                                                 Scheme =:= "https") ->
            string:trim(Str, trailing, "/");
        _ ->
            throw({bad_config, endpoint, Endpoint,
                   "must be an http:// or https:// URL with a host"})
    end.

service_name(Name) when is_binary(Name); is_list(Name); is_atom(Name) ->
    case text(Name) of
        {ok, <<>>} -> throw({bad_config, service_name, Name, "must not be empty"});
        {ok, Bin} -> Bin;
        error -> throw({bad_config, service_name, Name, "must be a string"})
    end;
service_name(Name) ->
    throw({bad_config, service_name, Name, "must be a string"}).

resource_attributes(Attrs) when is_map(Attrs) ->
    Attrs;
resource_attributes(Attrs) when is_list(Attrs) ->
    case lists:all(fun(P) -> tuple_size_2(P) end, Attrs) of
        true -> Attrs;
        false -> throw({bad_config, resource_attributes, Attrs,
                        "must be a map or a list of {Key, Value}"})
    end;
resource_attributes(Attrs) ->
    throw({bad_config, resource_attributes, Attrs,
           "must be a map or a list of {Key, Value}"}).

tuple_size_2({_, _}) -> true;
tuple_size_2(_) -> false.

ssl_option({Key, _}) -> is_atom(Key);
ssl_option(_) -> false.

%% The service name when neither `service_name' nor OTEL_SERVICE_NAME sets
%% it: the resource attributes' `service.name', as the OpenTelemetry SDK
%% specification has it (OTEL_SERVICE_NAME wins over a `service.name' in
%% OTEL_RESOURCE_ATTRIBUTES, which is otherwise the service's name), else
%% `unknown_service:erlang'. The resource's `service.name' is the service
%% name alone, so that a `service.name' among the attributes was dropped
%% for the default and `OTEL_RESOURCE_ATTRIBUTES=service.name=checkout'
%% reported the service as unknown.
resource_service_name(Attrs) ->
    Pairs = case Attrs of
                #{} -> maps:to_list(Attrs);
                _ -> Attrs
            end,
    case [V || {K, V} <- Pairs, text(K) =:= {ok, <<"service.name">>},
               text(V) =/= {ok, <<>>}] of
        [Name | _] -> Name;
        [] -> <<"unknown_service:erlang">>
    end.

%% OTEL_RESOURCE_ATTRIBUTES: comma-separated key=value pairs, values
%% percent-encoded (OpenTelemetry SDK environment variable specification).
os_resource_attributes() ->
    case os:getenv("OTEL_RESOURCE_ATTRIBUTES") of
        false -> [];
        Str ->
            [{unicode:characters_to_binary(string:trim(K)),
              unicode:characters_to_binary(percent_decode(string:trim(V)))}
             || Pair <- string:split(Str, ",", all),
                [K, V] <- [string:split(Pair, "=")],
                string:trim(K) =/= ""]
    end.

percent_decode(S) ->
    case uri_string:percent_decode(S) of
        {error, _, _} -> S;
        D -> D
    end.

%% Each header as httpc sends it: a list of bytes, the UTF-8 encoding of
%% the text given. httpc writes a header as iodata, so a character above
%% 255 in it crashed its connection process on every request, and every
%% export waited out its timeout. A name must be an HTTP token and a value
%% must hold no control character (RFC 9110, sections 5.1 and 5.5): a CR or
%% LF would end the header early and inject others, and a collector
%% refuses the malformed request whole, on every request.
headers(Headers) ->
    try
        [header(H) || H <- Headers]
    catch
        error:_ -> throw({bad_config, headers, Headers,
                          "must be a list of {Name, Value} strings"});
        throw:{bad_header, Why} -> throw({bad_config, headers, Headers, Why})
    end.

header({Name, Value}) ->
    {ok, N} = text(Name),
    {ok, V} = text(Value),
    true = N =/= <<>>,
    case token(N) of
        true -> ok;
        false -> throw({bad_header, "a header name must be an HTTP token "
                                    "(letters, digits and !#$%&'*+-.^_`|~)"})
    end,
    case field_value(V) of
        true -> ok;
        false -> throw({bad_header, "a header value must not hold control "
                                    "characters (CR, LF, NUL, ...)"})
    end,
    {binary_to_list(N), binary_to_list(V)}.

token(<<C, Rest/binary>>) when C >= $a, C =< $z; C >= $A, C =< $Z; C >= $0, C =< $9 ->
    token(Rest);
token(<<C, Rest/binary>>) ->
    lists:member(C, "!#$%&'*+-.^_`|~") andalso token(Rest);
token(<<>>) ->
    true.

%% Tab, printable ASCII and the bytes of non-ASCII characters (obs-text).
field_value(<<C, Rest/binary>>) when C =:= $\t; C >= 16#20, C =/= 16#7f ->
    field_value(Rest);
field_value(<<>>) ->
    true;
field_value(_) ->
    false.

text(B) when is_binary(B) -> {ok, B};
text(A) when is_atom(A) -> {ok, atom_to_binary(A, utf8)};
text(L) when is_list(L) ->
    try unicode:characters_to_binary(L) of
        B when is_binary(B) -> {ok, B};
        _ -> error
    catch
        error:badarg -> error
    end;
text(_) -> error.
