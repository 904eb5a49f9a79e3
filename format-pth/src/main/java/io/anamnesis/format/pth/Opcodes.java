package io.anamnesis.format.pth;

/**
 * The pickle opcodes, named and valued as CPython's {@code pickletools} lists them
 * ({@code pickletools.opcodes}: the one-byte {@code code} of each), grouped by the protocol
 * that added them. {@link Unpickler} runs those of protocols 2 to 5 that torch.save emits and
 * refuses the rest by name.
 */
final class Opcodes {
    private Opcodes() {
    }

    // protocol 0 and 1
    static final int MARK = '(';
    static final int STOP = '.';
    static final int POP = '0';
    static final int POP_MARK = '1';
    static final int DUP = '2';
    static final int FLOAT = 'F';
    static final int INT = 'I';
    static final int BININT = 'J';
    static final int BININT1 = 'K';
    static final int LONG = 'L';
    static final int BININT2 = 'M';
    static final int NONE = 'N';
    static final int PERSID = 'P';
    static final int BINPERSID = 'Q';
    static final int REDUCE = 'R';
    static final int STRING = 'S';
    static final int BINSTRING = 'T';
    static final int SHORT_BINSTRING = 'U';
    static final int UNICODE = 'V';
    static final int BINUNICODE = 'X';
    static final int APPEND = 'a';
    static final int BUILD = 'b';
    static final int GLOBAL = 'c';
    static final int DICT = 'd';
    static final int EMPTY_DICT = '}';
    static final int APPENDS = 'e';
    static final int GET = 'g';
    static final int BINGET = 'h';
    static final int INST = 'i';
    static final int LONG_BINGET = 'j';
    static final int LIST = 'l';
    static final int EMPTY_LIST = ']';
    static final int OBJ = 'o';
    static final int PUT = 'p';
    static final int BINPUT = 'q';
    static final int LONG_BINPUT = 'r';
    static final int SETITEM = 's';
    static final int TUPLE = 't';
    static final int EMPTY_TUPLE = ')';
    static final int SETITEMS = 'u';
    static final int BINFLOAT = 'G';

    // protocol 2
    static final int PROTO = 0x80;
    static final int NEWOBJ = 0x81;
    static final int EXT1 = 0x82;
    static final int EXT2 = 0x83;
    static final int EXT4 = 0x84;
    static final int TUPLE1 = 0x85;
    static final int TUPLE2 = 0x86;
    static final int TUPLE3 = 0x87;
    static final int NEWTRUE = 0x88;
    static final int NEWFALSE = 0x89;
    static final int LONG1 = 0x8a;
    static final int LONG4 = 0x8b;

    // protocol 3
    static final int BINBYTES = 'B';
    static final int SHORT_BINBYTES = 'C';

    // protocol 4
    static final int SHORT_BINUNICODE = 0x8c;
    static final int BINUNICODE8 = 0x8d;
    static final int BINBYTES8 = 0x8e;
    static final int EMPTY_SET = 0x8f;
    static final int ADDITEMS = 0x90;
    static final int FROZENSET = 0x91;
    static final int NEWOBJ_EX = 0x92;
    static final int STACK_GLOBAL = 0x93;
    static final int MEMOIZE = 0x94;
    static final int FRAME = 0x95;

    // protocol 5
    static final int BYTEARRAY8 = 0x96;
    static final int NEXT_BUFFER = 0x97;
    static final int READONLY_BUFFER = 0x98;
}
