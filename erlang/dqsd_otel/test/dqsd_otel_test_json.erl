%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0

%% @doc A strict JSON decoder (RFC 8259) for the tests, so that they check
%% the structure the encoder produced rather than its spelling.
%%
%% Objects become maps with binary keys (a repeated key is an error), arrays
%% lists, strings UTF-8 binaries, numbers integers or floats, and `true',
%% `false', `null' atoms. Anything not JSON (an unescaped control character,
%% invalid UTF-8, trailing text) raises `{json, Why, Rest}'.
-module(dqsd_otel_test_json).

-export([decode/1]).

-spec decode(iodata()) -> term().
decode(IoData) ->
    Bin = iolist_to_binary(IoData),
    case unicode:characters_to_binary(Bin) of
        Bin -> ok;
        _ -> erlang:error({json, invalid_utf8, Bin})
    end,
    {Value, Rest} = value(ws(Bin)),
    case ws(Rest) of
        <<>> -> Value;
        Trailing -> erlang:error({json, trailing_text, Trailing})
    end.

ws(<<C, R/binary>>) when C =:= $\s; C =:= $\t; C =:= $\n; C =:= $\r -> ws(R);
ws(B) -> B.

value(<<${, R/binary>>) -> object(ws(R));
value(<<$[, R/binary>>) -> array(ws(R));
value(<<$", R/binary>>) -> string(R, <<>>);
value(<<"true", R/binary>>) -> {true, R};
value(<<"false", R/binary>>) -> {false, R};
value(<<"null", R/binary>>) -> {null, R};
value(B) -> number(B).

object(<<$}, R/binary>>) -> {#{}, R};
object(B) -> members(B, #{}).

members(<<$", R/binary>>, Map) ->
    {Key, R1} = string(R, <<>>),
    case maps:is_key(Key, Map) of
        true -> erlang:error({json, duplicate_key, Key});
        false -> ok
    end,
    R2 = expect($:, ws(R1)),
    {Value, R3} = value(ws(R2)),
    Map1 = Map#{Key => Value},
    case ws(R3) of
        <<$,, R4/binary>> -> members(ws(R4), Map1);
        <<$}, R4/binary>> -> {Map1, R4};
        Other -> erlang:error({json, expected_comma_or_brace, Other})
    end;
members(Other, _) ->
    erlang:error({json, expected_key, Other}).

array(<<$], R/binary>>) -> {[], R};
array(B) -> elements(B, []).

elements(B, Acc) ->
    {Value, R} = value(B),
    case ws(R) of
        <<$,, R1/binary>> -> elements(ws(R1), [Value | Acc]);
        <<$], R1/binary>> -> {lists:reverse([Value | Acc]), R1};
        Other -> erlang:error({json, expected_comma_or_bracket, Other})
    end.

expect(C, <<C, R/binary>>) -> R;
expect(C, Other) -> erlang:error({json, {expected, [C]}, Other}).

string(<<$", R/binary>>, Acc) ->
    {Acc, R};
string(<<$\\, $u, H:4/binary, R/binary>>, Acc) ->
    case binary_to_integer(H, 16) of
        High when High >= 16#D800, High =< 16#DBFF ->
            <<$\\, $u, L:4/binary, R1/binary>> = R,
            Low = binary_to_integer(L, 16),
            true = Low >= 16#DC00 andalso Low =< 16#DFFF,
            C = 16#10000 + ((High - 16#D800) bsl 10) + (Low - 16#DC00),
            string(R1, <<Acc/binary, C/utf8>>);
        C when C >= 16#DC00, C =< 16#DFFF ->
            erlang:error({json, lone_surrogate, H});
        C ->
            string(R, <<Acc/binary, C/utf8>>)
    end;
string(<<$\\, E, R/binary>>, Acc) ->
    C = case E of
            $" -> $";
            $\\ -> $\\;
            $/ -> $/;
            $b -> $\b;
            $f -> $\f;
            $n -> $\n;
            $r -> $\r;
            $t -> $\t;
            _ -> erlang:error({json, bad_escape, E})
        end,
    string(R, <<Acc/binary, C>>);
string(<<C, R/binary>>, Acc) when C >= 16#20 ->
    string(R, <<Acc/binary, C>>);
string(Other, _) ->
    erlang:error({json, bad_string, Other}).

number(B) ->
    {Text, Rest} = number_chars(B, <<>>),
    case re:run(Text, "^-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][-+]?[0-9]+)?$",
                [{capture, all, binary}]) of
        {match, [_, _]} ->
            {binary_to_integer(Text), Rest};
        {match, [_, Int, Frac | Exp]} ->
            Mantissa = case Frac of <<>> -> <<Int/binary, ".0">>; _ -> <<Int/binary, Frac/binary>> end,
            Sign = case Text of <<$-, _/binary>> -> <<"-">>; _ -> <<>> end,
            {binary_to_float(iolist_to_binary([Sign, Mantissa | Exp])), Rest};
        nomatch ->
            erlang:error({json, bad_number, B})
    end.

number_chars(<<C, R/binary>>, Acc)
  when C >= $0, C =< $9; C =:= $-; C =:= $+; C =:= $.; C =:= $e; C =:= $E ->
    number_chars(R, <<Acc/binary, C>>);
number_chars(R, Acc) ->
    {Acc, R}.
