" Vim syntax file
" Language:    Fuse (tensor equations)
" Filenames:   *.fuse
" A fallback for highlighting without the language server's semantic tokens
" (which, when the server is attached, are drawn over it).

if exists('b:current_syntax')
  finish
endif

let s:cpo_save = &cpo
set cpo&vim

syn case match
syn sync minlines=50

" Comments and strings (file paths)
syn keyword fuseTodo       TODO FIXME XXX NOTE contained
syn match   fuseComment    /#.*$/ contains=fuseTodo,@Spell
syn region  fuseString     start=/"/ skip=/\\[\\"]/ end=/"/ oneline contains=fuseEscape
syn match   fuseEscape     /\\[\\"]/ contained

" Numbers: 3, 0.5, .5, 1e-5
syn match   fuseNumber     /\<\d\+\%(\.\d*\)\=\%([eE][+-]\=\d\+\)\=\>/
syn match   fuseNumber     /\%(\w\)\@<!\.\d\+\%([eE][+-]\=\d\+\)\=\>/

" Keywords: export, axis, param, train start a statement (a line or after `;`);
" reduce(op, i, ...) takes a projection operator.
syn match   fuseKeyword    /\%(^\|;\)\s*\zs\%(export\|axis\|param\|train\)\>/
" axis x = valid: a padding instead of an extent
syn match   fuseKeyword    /\%(\<axis\>.*=\s*\)\@<=\%(valid\|same\)\>/
syn match   fuseKeyword    /\<reduce\ze\s*(/
" fn name(params) -> result { body }; case { c -> a; default -> b }; e when c
syn match   fuseKeyword    /\<\%(fn\|case\|when\|default\)\>/
" let h[i] = ... (a local tensor; blocks are braces { ... })
syn match   fuseKeyword    /\<let\>/
" negation in a rule: Safe(x) = Node(x) not Blocked(x, _)
syn match   fuseKeyword    /\<not\>/
syn match   fuseFunction   /\%(\<fn\s\+\)\@<=\h\w*/
syn match   fuseReduceOp   /\%(\<reduce\s*(\s*\)\@<=\%(sum\|max\|min\|avg\)\>/

" Builtins: only when called
syn match   fuseBuiltin    /\<\%(abs\|causal_mask\|masked_fill\|where\|concat\|const\|cosine\|cos\|cross_entropy\|even\|exponential\|exp\|gather\|gelu_tanh\|gelu\|linear\|lnorm\|log_softmax\|log\|max\|min\|odd\|pow\|relu\|select\|sig\|sin\|softmax\|sqrt\|step\|tanh\|topk\)\ze\s*(/
" keyword arguments: softmax(x, axis=i), lnorm(x, eps=1e-5), topk(x, k=2)
syn match   fuseKwarg      /\%([(,]\s*\)\@<=\h\w*\ze\s*=[^=]/

" Operators: the projection operators max= min= avg=, +=, =, arithmetic, ?
syn match   fuseOperator   /[-+*/^=?]/
syn match   fuseOperator   /\*\*/
syn match   fuseOperator   /->/
" the Boolean operators of conditions: && || ! and the comparisons < <= > >= == !=
syn match   fuseOperator   /&&\|||\|!\|[<>]/
syn match   fuseProjection /\<\%(max\|min\|avg\)=/
syn match   fuseProjection /+=/

" Tensors: capitalised names; `Name(` is a Boolean relation
syn match   fusePrime      /'\+/ contained
syn match   fuseTensor     /\<\u\w*'*/ contains=fusePrime
syn match   fuseRelation   /\<\u\w*'*\ze\s*(/ contains=fusePrime

" Imports: import "lib/graph.fuse" as ns, then its names as ns::Name (a::b::T)
syn match   fuseKeyword    /\%(^\|;\)\s*\zsimport\>/
syn match   fuseKeyword    /\%(\<import\s\+"[^"]*"\s\+\)\@<=as\>/
syn match   fuseNamespace  /\<\h\w*\ze::/
syn match   fuseNamespace  /\%(\<import\s\+"[^"]*"\s\+as\s\+\)\@<=\h\w*/
syn match   fuseNsSep      /::/

" Index lists: Name[i, j-1, p'., *t+1, x/2, 1:3] and relation arguments
" Name(x, Alice): lowercase names are indices, capitalised ones constants.
syn region  fuseIndices    matchgroup=fuseDelimiter start=/\%(\<\u\w*'*\)\@<=\[/ end=/\]/
      \ contains=fuseIndex,fuseAxisDot,fuseSymbol,fuseNumber,fuseIndexOp,fuseComment
syn region  fuseArguments  matchgroup=fuseDelimiter start=/\%(\<\u\w*'*\)\@<=(/ end=/)/
      \ contains=fuseIndex,fuseSymbol,fuseNumber,fuseIndexOp,fuseString,fuseComment
syn match   fuseIndex      /\<[a-z_]\w*'*/ contained contains=fusePrime
syn match   fuseAxisDot    /\<[a-z_]\w*'*\./ contained contains=fusePrime
syn match   fuseSymbol     /\<\u\w*'*/ contained contains=fusePrime
syn match   fuseIndexOp    /[-+*/:]/ contained

hi def link fuseComment    Comment
hi def link fuseTodo       Todo
hi def link fuseString     String
hi def link fuseEscape     SpecialChar
hi def link fuseNumber     Number
hi def link fuseKeyword    Keyword
hi def link fuseReduceOp   Function
hi def link fuseBuiltin    Function
hi def link fuseFunction   Function
hi def link fuseKwarg      Label
hi def link fuseOperator   Operator
hi def link fuseProjection Statement
hi def link fuseTensor     Type
hi def link fuseRelation   Structure
hi def link fusePrime      Special
hi def link fuseIndex      Identifier
hi def link fuseAxisDot    Special
hi def link fuseSymbol     Constant
hi def link fuseIndexOp    Operator
hi def link fuseDelimiter  Delimiter
hi def link fuseNamespace  Include
hi def link fuseNsSep      Delimiter

let b:current_syntax = 'fuse'

let &cpo = s:cpo_save
unlet s:cpo_save
